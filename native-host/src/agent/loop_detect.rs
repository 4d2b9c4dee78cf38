//! Loop detection: the same actions on an unchanged page, again and again.
//! Each step is keyed by a fingerprint of the page it acted on (URL and
//! element list) and a hash of its actions. When one key comes back
//! [`WARN_AT`] times among the last [`WINDOW`] steps the model is told; at
//! [`STOP_AT`] the task stops so the user can help.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};

use errand_protocol::{Action, Observation};

/// Steps looked back on.
pub const WINDOW: usize = 8;
/// Repeats that make the agent warn the model.
pub const WARN_AT: usize = 3;
/// Repeats that stop the task.
pub const STOP_AT: usize = 5;

/// What the detector concluded after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    /// Tell the model; the number of repeats.
    Warn(usize),
    /// Stop the task; the number of repeats.
    Stop(usize),
}

/// Remembers the last steps' keys.
#[derive(Debug, Default)]
pub struct LoopDetector {
    recent: VecDeque<(u64, u64)>,
}

/// A page's fingerprint: its URL and its element list.
pub fn page_fingerprint(obs: &Observation) -> u64 {
    let mut h = DefaultHasher::new();
    obs.url.hash(&mut h);
    obs.text.hash(&mut h);
    h.finish()
}

/// A hash of a step's actions.
pub fn actions_hash(actions: &[Action]) -> u64 {
    let mut h = DefaultHasher::new();
    serde_json::to_string(actions).unwrap_or_default().hash(&mut h);
    h.finish()
}

impl LoopDetector {
    /// Records a step and judges it.
    pub fn record(&mut self, page: u64, actions: u64) -> Verdict {
        self.recent.push_back((page, actions));
        if self.recent.len() > WINDOW {
            self.recent.pop_front();
        }
        let repeats = self.recent.iter().filter(|k| **k == (page, actions)).count();
        if repeats >= STOP_AT {
            Verdict::Stop(repeats)
        } else if repeats >= WARN_AT {
            Verdict::Warn(repeats)
        } else {
            Verdict::Fine
        }
    }
}

/// What the model is told when it repeats itself.
pub fn warning(repeats: usize) -> String {
    format!(
        "Warning: you have now done the same actions {repeats} times on this page and it has not \
         changed. Repeating them will not help. Try something different: another element, \
         scrolling to find what is missing, another way to reach the goal, or finish with `done` \
         explaining what blocks you. After {STOP_AT} repeats the task is stopped."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_then_stops_on_repeats_only() {
        let mut d = LoopDetector::default();
        let obs = Observation {
            url: "http://a/".into(),
            text: "[1]<button>Go".into(),
            ..Default::default()
        };
        let page = page_fingerprint(&obs);
        let click = actions_hash(&[Action::Click {
            index: 1,
            button: Default::default(),
            modifiers: vec![],
            dialog: Default::default(),
        }]);
        let other = actions_hash(&[Action::Scroll {
            direction: errand_protocol::ScrollDirection::Down,
            index: None,
            pages: None,
        }]);
        assert_ne!(click, other);
        assert_eq!(d.record(page, click), Verdict::Fine);
        assert_eq!(d.record(page, other), Verdict::Fine);
        assert_eq!(d.record(page, click), Verdict::Fine);
        assert_eq!(d.record(page, click), Verdict::Warn(3));
        assert_eq!(d.record(page, click), Verdict::Warn(4));
        // The same click on a changed page is not a repeat.
        let changed =
            page_fingerprint(&Observation { text: "[1]<button>Go\nTwo".into(), ..obs.clone() });
        assert_eq!(d.record(changed, click), Verdict::Fine);
        assert_eq!(d.record(page, click), Verdict::Stop(5));
        assert!(warning(3).contains("3 times"));
    }

    #[test]
    fn old_steps_leave_the_window() {
        let mut d = LoopDetector::default();
        for i in 0..WINDOW as u64 {
            d.record(1, 100 + i);
        }
        assert_eq!(d.record(1, 7), Verdict::Fine);
        assert_eq!(d.record(1, 7), Verdict::Fine);
    }
}
