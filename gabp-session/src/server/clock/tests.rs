use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use gabp_types::methods::{StepTicks, TIME_CHANGED_CHANNEL};
use gabp_types::ChannelName;

use super::super::events::{EventHub, EventPublisher};
use super::GameClock;

fn clock() -> (GameClock, EventPublisher, Arc<AtomicUsize>) {
    let hub = Arc::new(EventHub::new(1 << 20));
    assert!(hub.register(ChannelName::new(TIME_CHANGED_CHANNEL).unwrap()));
    let events = EventPublisher::new(hub);
    let wakes = Arc::new(AtomicUsize::new(0));
    let counter = wakes.clone();
    let clock = GameClock::new(
        events.clone(),
        Box::new(move || {
            counter.fetch_add(1, Ordering::Relaxed);
        }),
    );
    (clock, events, wakes)
}

fn ticks(n: u32) -> StepTicks {
    StepTicks::new(n).unwrap()
}

#[test]
fn runs_until_paused_and_pause_twice_announces_once() {
    let (clock, events, _) = clock();
    assert!(clock.run_tick(|| {}));
    assert_eq!(clock.status().tick, 1);
    let paused = clock.pause();
    assert!(paused.paused && paused.tick == 1);
    assert_eq!(clock.pause(), paused, "a second pause changes nothing");
    assert_eq!(events.next_seq(TIME_CHANGED_CHANNEL), Some(1), "one event");
    assert!(!clock.run_tick(|| panic!("a paused clock runs no tick")));
    assert!(!clock.resume().paused);
    assert_eq!(events.next_seq(TIME_CHANGED_CHANNEL), Some(2));
    assert!(clock.should_tick());
}

#[test]
fn a_step_runs_exactly_its_ticks_and_answers_with_the_counter() {
    let (clock, _, wakes) = clock();
    clock.pause();
    let wakes_before = wakes.load(Ordering::Relaxed);
    let mut answer = clock.step(ticks(3));
    assert!(
        wakes.load(Ordering::Relaxed) > wakes_before,
        "the loop is woken"
    );
    assert!(clock.is_stepping());
    let mut ran = 0;
    while clock.run_tick(|| ran += 1) {
        assert!(ran <= 3);
    }
    assert_eq!(ran, 3);
    let state = answer.try_recv().expect("answered after the third tick");
    assert!(state.paused);
    assert_eq!(state.tick, 3);
    assert!(!clock.is_stepping() && clock.is_paused());
}

#[test]
fn steps_while_paused_add_up_in_order() {
    let (clock, _, _) = clock();
    clock.pause();
    let mut first = clock.step(ticks(2));
    let mut second = clock.step(ticks(5));
    for expected in 1..=7u64 {
        assert!(clock.run_tick(|| {}));
        assert_eq!(clock.status().tick, expected);
        if expected == 2 {
            assert_eq!(first.try_recv().unwrap().tick, 2);
        }
        if expected < 7 {
            assert!(second.try_recv().is_err(), "not before its last tick");
        }
    }
    assert_eq!(second.try_recv().unwrap().tick, 7);
    assert!(!clock.should_tick());
}

#[test]
fn a_step_while_running_answers_after_the_next_ticks() {
    let (clock, _, _) = clock();
    clock.run_tick(|| {});
    let mut answer = clock.step(ticks(2));
    clock.run_tick(|| {});
    assert!(answer.try_recv().is_err());
    // Pausing in between does not cut the step short.
    clock.pause();
    assert!(clock.run_tick(|| {}));
    let state = answer.try_recv().unwrap();
    assert_eq!((state.paused, state.tick), (true, 3));
    assert!(!clock.run_tick(|| {}));
}

#[test]
fn abandoned_steps_are_forgotten() {
    let (clock, _, _) = clock();
    clock.pause();
    for _ in 0..100 {
        drop(clock.step(ticks(1)));
    }
    let _kept = clock.step(ticks(1));
    assert_eq!(clock.inner.state.lock().steps.len(), 1);
}

#[test]
fn an_engine_that_runs_its_own_ticks_learns_the_steps_owed() {
    let (clock, _, _) = clock();
    assert_eq!(clock.steps_owed(), 0, "time runs: nothing is owed");
    clock.pause();
    let mut answered = clock.step(ticks(3));
    assert_eq!(clock.steps_owed(), 3);
    for owed in (0..3).rev() {
        assert!(clock.begin_tick());
        clock.ticked();
        assert_eq!(clock.steps_owed(), owed);
    }
    assert_eq!(answered.try_recv().unwrap().tick, 3);
    assert!(!clock.begin_tick(), "paused with nothing owed");
    clock.ticked();
    // A pause during a tick the engine began is answered when it ends.
    clock.resume();
    assert!(clock.begin_tick());
    let mut settled = clock.pause_settled().unwrap_err();
    assert!(settled.try_recv().is_err());
    clock.ticked();
    assert_eq!(settled.try_recv().unwrap().tick, 5);
}
