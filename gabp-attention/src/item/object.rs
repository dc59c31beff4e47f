//! The open item and how entries fold into it: its kinds, its bounded sample and the attention object it
//! shows (SPEC/1.0/attention.md §2, §5).

use std::time::Duration;

use gabp_types::{Attention, AttentionSample, AttentionState, Severity};

use super::{at_least_one, bounded_text, non_empty, Entry};
use crate::policy::AttentionPolicy;

/// One kind of entry in the sample.
#[derive(Debug, Clone)]
pub(super) struct Kind {
    signature: String,
    level: Severity,
    message: String,
    count: u64,
    latest: u64,
}

/// The entries of kinds pushed out of the sample to keep it bounded.
#[derive(Debug, Clone)]
pub(super) struct Others {
    level: Severity,
    count: u64,
    latest: u64,
}

#[derive(Debug, Clone)]
pub(super) struct Item {
    pub(super) id: String,
    pub(super) severity: Severity,
    pub(super) headline: String,
    pub(super) blocking: bool,
    pub(super) state_invalidated: bool,
    pub(super) causal_method: Option<String>,
    pub(super) causal_operation_id: Option<String>,
    pub(super) opened_at: u64,
    pub(super) latest: u64,
    pub(super) total: u64,
    pub(super) kinds: Vec<Kind>,
    pub(super) others: Option<Others>,
    /// When the last event of this item was emitted (`opened` or `updated`).
    pub(super) last_emit: Duration,
    /// Whether the item changed since then.
    pub(super) dirty: bool,
}

impl Item {
    pub(super) fn fold(
        &mut self,
        entry: &Entry,
        sequence: u64,
        policy: &AttentionPolicy,
        limit: usize,
    ) {
        let level = entry.level;
        if level > self.severity {
            self.severity = level;
            self.headline = bounded_text(&entry.message);
        }
        self.blocking |= entry.blocking.unwrap_or_else(|| policy.blocks(level));
        self.state_invalidated |= entry
            .state_invalidated
            .unwrap_or_else(|| policy.invalidates_state(level));
        if self.causal_method.is_none() {
            self.causal_method = entry.causal_method.as_deref().map(bounded_text);
        }
        if self.causal_operation_id.is_none() {
            self.causal_operation_id = entry.causal_operation_id.as_deref().map(bounded_text);
        }
        self.latest = sequence;
        self.total = self.total.saturating_add(1);
        let signature = entry.signature.as_deref().unwrap_or(&entry.message);
        match self.kinds.iter_mut().find(|k| k.signature == signature) {
            Some(kind) => {
                kind.count = kind.count.saturating_add(1);
                kind.latest = sequence;
                if level > kind.level {
                    kind.level = level;
                    kind.message = bounded_text(&entry.message);
                }
            }
            None => self.kinds.push(Kind {
                signature: signature.to_owned(),
                level,
                message: bounded_text(&entry.message),
                count: 1,
                latest: sequence,
            }),
        }
        // Keep the sample bounded: the least severe, then least recent, kinds go to the "others" entry.
        while self.kinds.len() + usize::from(self.others.is_some()) > limit {
            let Some((weakest, _)) = self
                .kinds
                .iter()
                .enumerate()
                .min_by_key(|(_, k)| (k.level, k.latest))
            else {
                break;
            };
            let kind = self.kinds.swap_remove(weakest);
            let others = self.others.get_or_insert(Others {
                level: kind.level,
                count: 0,
                latest: kind.latest,
            });
            others.level = others.level.max(kind.level);
            others.count = others.count.saturating_add(kind.count);
            others.latest = others.latest.max(kind.latest);
        }
        self.dirty = true;
    }

    fn summary(&self) -> String {
        match self.total {
            0 | 1 => self.headline.clone(),
            n => format!("{} (and {} more urgent entries)", self.headline, n - 1),
        }
    }

    fn sample(&self) -> Vec<AttentionSample> {
        let mut kinds: Vec<&Kind> = self.kinds.iter().collect();
        kinds.sort_by_key(|k| std::cmp::Reverse((k.level, k.latest)));
        let mut sample: Vec<AttentionSample> = kinds
            .into_iter()
            .map(|k| AttentionSample {
                level: k.level,
                message: non_empty(k.message.clone()),
                repeat_count: at_least_one(k.count),
                latest_sequence: k.latest,
                extra: serde_json::Map::new(),
            })
            .collect();
        if let Some(o) = &self.others {
            let message = if o.count == 1 {
                "1 entry of another kind (not sampled individually)".to_owned()
            } else {
                format!(
                    "{} entries of other kinds (not sampled individually)",
                    o.count
                )
            };
            sample.push(AttentionSample {
                level: o.level,
                message: non_empty(message),
                repeat_count: at_least_one(o.count),
                latest_sequence: o.latest,
                extra: serde_json::Map::new(),
            });
        }
        sample
    }

    pub(super) fn snapshot(&self, state: AttentionState) -> Attention {
        Attention {
            attention_id: non_empty(self.id.clone()),
            state,
            severity: self.severity,
            // A cleared item gates nothing.
            blocking: self.blocking && state == AttentionState::Open,
            state_invalidated: self.state_invalidated,
            summary: non_empty(bounded_text(&self.summary())),
            causal_operation_id: self.causal_operation_id.clone().map(non_empty),
            causal_method: self.causal_method.clone().map(non_empty),
            opened_at_sequence: self.opened_at,
            latest_sequence: self.latest,
            diagnostics_cursor: None,
            total_urgent_entries: self.total,
            sample: Some(self.sample()),
            extra: serde_json::Map::new(),
        }
    }
}
