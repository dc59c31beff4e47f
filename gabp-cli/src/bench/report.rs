//! What `gabp bench` prints for people: the table with units and a one-sentence verdict.

use std::time::Duration;

use gabp_testkit::conformance::nagle_hint;
use serde_json::{json, Value};

use super::{BenchArgs, Invocation, Run, Stats};

/// GABP relative to the floor: latency multiples and the share of the floor's throughput, each the median of
/// the ratios of rounds that measured both.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Ratios {
    pub(super) p50: f64,
    pub(super) p99: f64,
    pub(super) calls_per_s: f64,
    pub(super) rounds: usize,
}

impl Ratios {
    /// From the runs of each side, round by round.
    pub(super) fn paired(gabp: &[Run], floor: &[Run]) -> Ratios {
        let rounds: Vec<(Stats, Stats)> = gabp
            .iter()
            .zip(floor)
            .map(|(g, f)| {
                let stats = |r: &Run| Stats::from_latencies(r.latencies.clone(), r.elapsed);
                (stats(g), stats(f))
            })
            .collect();
        let median_of = |ratio: fn(&Stats, &Stats) -> f64| {
            median(rounds.iter().map(|(g, f)| ratio(g, f)).collect())
        };
        Ratios {
            p50: median_of(|g, f| quotient(g.p50.as_secs_f64(), f.p50.as_secs_f64())),
            p99: median_of(|g, f| quotient(g.p99.as_secs_f64(), f.p99.as_secs_f64())),
            calls_per_s: median_of(|g, f| quotient(g.calls_per_s, f.calls_per_s)),
            rounds: rounds.len(),
        }
    }

    pub(super) fn json(&self) -> Value {
        let two = |x: f64| (x * 100.0).round() / 100.0;
        json!({
            "p50": two(self.p50),
            "p99": two(self.p99),
            "calls_per_s": two(self.calls_per_s),
            "rounds": self.rounds,
        })
    }
}

/// `a / b`, or 0 when `b` is not positive.
fn quotient(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The median (the mean of the middle two for an even count); 0 for none.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

pub(super) fn human(
    args: &BenchArgs,
    invocation: &Invocation,
    where_: &str,
    gabp: &Stats,
    floor: Option<&(Stats, Ratios)>,
) -> String {
    let line = |name: &str, s: &Stats| {
        format!(
            "{name:<6} p50 {:>9}   p99 {:>9}   {:>9.0} calls/s",
            duration(s.p50),
            duration(s.p99),
            s.calls_per_s
        )
    };
    let mut out = format!(
        "{} calls of {}, {} at a time{}, over {where_}\n",
        args.calls,
        invocation.label(),
        args.concurrency,
        if args.from_threads {
            " from threads outside the runtime"
        } else {
            ""
        }
    );
    out.push_str(&line("gabp", gabp));
    out.push('\n');
    if let Some((floor, ratios)) = floor {
        out.push_str(&line("floor", floor));
        out.push_str("   (raw framed echo, same transport and frame size)\n");
        let r = ratios.json();
        out.push_str(&format!(
            "ratio  p50 {}x   p99 {}x   throughput {}x of the floor   (medians of {} rounds, taken in turns)\n",
            r["p50"], r["p99"], r["calls_per_s"], ratios.rounds
        ));
    }
    out.push_str(&verdict(gabp, floor, args.concurrency));
    out.push('\n');
    out.push_str(&advice(gabp));
    out
}

/// The lines of advice the numbers call for, such as the Nagle hint.
pub(super) fn advice(gabp: &Stats) -> String {
    nagle_hint(gabp.p50).map_or_else(String::new, |hint| format!("{hint}\n"))
}

/// A latency with the unit that reads best: `41.3 us`, `2.15 ms`, `1.20 s`.
fn duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} us")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// One sentence on what the numbers mean.
fn verdict(gabp: &Stats, floor: Option<&(Stats, Ratios)>, concurrency: u64) -> String {
    let typical = format!(
        "verdict: a typical call takes {} and 99 in 100 finish within {}",
        duration(gabp.p50),
        duration(gabp.p99)
    );
    let Some((floor, ratios)) = floor else {
        return format!(
            "{typical}; the mod answered {:.0} calls per second with {concurrency} at a time.",
            gabp.calls_per_s
        );
    };
    let (times, share) = (ratios.p50, ratios.calls_per_s * 100.0);
    // The gap follows from the ratio, so that the sentence agrees with itself.
    let gap = floor.p50.mul_f64((times - 1.0).abs());
    let side = if times < 1.0 { "less" } else { "more" };
    let judgement = if times < 1.0 {
        "under the floor"
    } else if times <= 2.0 {
        "close to the floor"
    } else if times <= 5.0 {
        "a few times the floor"
    } else {
        "well above the floor"
    };
    format!(
        "{typical}: {} {side} than the raw echo, {times:.1} times as long ({judgement}), and GABP makes \
         {share:.0}% as many calls per second as the echo.",
        duration(gap)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_the_unit_that_reads_best() {
        assert_eq!(duration(Duration::from_nanos(41_260)), "41.3 us");
        assert_eq!(duration(Duration::from_micros(2_150)), "2.15 ms");
        assert_eq!(duration(Duration::from_millis(1_200)), "1.20 s");
    }

    #[test]
    fn round_trips_near_40_ms_get_the_nagle_hint() {
        let stats = |p50_us: u64| Stats {
            calls: 100,
            p50: Duration::from_micros(p50_us),
            p99: Duration::from_micros(p50_us * 2),
            calls_per_s: 1e6 / p50_us as f64,
        };
        assert_eq!(
            advice(&stats(44_000)),
            "round trips near 40 ms: the mod may not set TCP_NODELAY (NoDelay in .NET) and may write a frame in pieces\n"
        );
        assert_eq!(advice(&stats(250)), "");
    }

    /// The floor's figures with the ratios of one round against a GABP run of that p50 and rate.
    fn one_round(p50_us: u64, rate: f64, floor: Stats) -> (Stats, Ratios) {
        let ratios = Ratios {
            p50: p50_us as f64 / floor.p50.as_micros() as f64,
            p99: 1.0,
            calls_per_s: rate / floor.calls_per_s,
            rounds: 1,
        };
        (floor, ratios)
    }

    #[test]
    fn medians_take_the_middle() {
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(quotient(1.0, 0.0), 0.0);
    }

    /// A machine that changes speed for a while moves both sides of a round alike; the ratio is taken round by
    /// round, so one round whose two sides saw different speeds does not decide it.
    #[test]
    fn ratios_are_medians_of_paired_rounds() {
        let run = |us: u64| Run {
            latencies: vec![Duration::from_micros(us); 3],
            elapsed: Duration::from_micros(3 * us),
        };
        // Round 1 slow for both, round 3 fast for both (1.4x each); in round 2 the floor ran slow and GABP fast.
        let gabp = [run(14), run(7), run(7)];
        let floor = [run(10), run(10), run(5)];
        let r = Ratios::paired(&gabp, &floor);
        assert_eq!(r.rounds, 3);
        assert!((r.p50 - 1.4).abs() < 1e-9, "{r:?}");
        assert!((r.p99 - 1.4).abs() < 1e-9, "{r:?}");
        assert!((r.calls_per_s - 1.0 / 1.4).abs() < 1e-9, "{r:?}");
        assert_eq!(r.json()["rounds"], 3);
        assert_eq!(r.json()["p50"], 1.4);
        // The pooled figures would say 0.7x.
        let pooled =
            Stats::pooled(&gabp).p50.as_secs_f64() / Stats::pooled(&floor).p50.as_secs_f64();
        assert!((pooled - 0.7).abs() < 1e-9, "{pooled}");
    }

    /// Pooled figures that disagree with the rounds' ratio (GABP 7 us, floor 10 us, 1.4x) still read as one
    /// sentence: the gap is the ratio's.
    #[test]
    fn the_verdict_agrees_with_its_ratio() {
        let stats = |p50_us: u64| Stats {
            calls: 3,
            p50: Duration::from_micros(p50_us),
            p99: Duration::from_micros(p50_us),
            calls_per_s: 1e5,
        };
        let (floor, mut ratios) = one_round(14, 1e5, stats(10));
        ratios.calls_per_s = 0.7;
        let said = verdict(&stats(7), Some(&(floor, ratios)), 1);
        assert!(
            said.contains(": 4.0 us more than the raw echo, 1.4 times as long"),
            "{said}"
        );
    }

    #[test]
    fn the_verdict_is_a_sentence_with_units() {
        let stats = |p50_us: u64, p99_us: u64, rate: f64| Stats {
            calls: 100,
            p50: Duration::from_micros(p50_us),
            p99: Duration::from_micros(p99_us),
            calls_per_s: rate,
        };
        assert_eq!(
            verdict(&stats(350, 1_200, 2_850.0), None, 1),
            "verdict: a typical call takes 350.0 us and 99 in 100 finish within 1.20 ms; the mod answered \
             2850 calls per second with 1 at a time."
        );
        assert_eq!(
            verdict(&stats(40, 100, 20_000.0), Some(&one_round(40, 20_000.0, stats(10, 30, 80_000.0))), 1),
            "verdict: a typical call takes 40.0 us and 99 in 100 finish within 100.0 us: 30.0 us more than the \
             raw echo, 4.0 times as long (a few times the floor), and GABP makes 25% as many calls per second \
             as the echo."
        );
        assert_eq!(
            verdict(&stats(190, 310, 336_000.0), Some(&one_round(190, 336_000.0, stats(250, 360, 184_000.0))), 64),
            "verdict: a typical call takes 190.0 us and 99 in 100 finish within 310.0 us: 60.0 us less than the \
             raw echo, 0.8 times as long (under the floor), and GABP makes 183% as many calls per second as \
             the echo."
        );
    }
}
