//! An observation sent as a change to the previous one.
//!
//! The host keeps the last observation of each tab; when it asks for the
//! next one it says which one it holds (`since`), and the content script,
//! when that is the one it sent last, answers with only what changed:
//! splices of the element list and of the text's lines. Applying them is
//! checked: a diff that does not fit the base is refused (the host then
//! asks for the whole observation), never half applied.

use rustc_hash::{FxHashMap, FxHashSet};
use std::hash::Hash;

use serde::{Deserialize, Serialize};

use crate::{ElementInfo, Observation};

/// What changed since the observation numbered `base`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservationDiff {
    /// The `seq` of the observation this one changes.
    pub base: u64,
    /// Splices of the element list, in order, positions in the base's list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elements: Vec<Splice<ElementInfo>>,
    /// Splices of the text's lines (split at `\n`, each line without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<Splice<String>>,
}

/// Replace `remove` items from position `at` (of the base list) by `insert`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Splice<T> {
    pub at: usize,
    #[serde(default)]
    pub remove: usize,
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    pub insert: Vec<T>,
}

/// Why a diff could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    #[error("the change is against observation {base}, the one held is {held}")]
    OtherBase { base: u64, held: u64 },
    #[error("a change of the {what} does not fit the previous observation (position {at})")]
    DoesNotFit { what: &'static str, at: usize },
}

/// The splices that turn `old` into `new`. Items are matched by `key`,
/// which must be unique within each list (an element's number, an
/// allocation's address); matched items that differ in value, and runs of
/// unmatched ones, become splices, trimmed of what is equal at their ends.
pub fn splices<T: PartialEq + Clone, K: Hash + Eq>(
    old: &[T],
    new: &[T],
    key: impl Fn(&T) -> K,
) -> Vec<Splice<T>> {
    // What is equal at both ends is left out before anything is hashed:
    // most changes are a few items somewhere in a long list.
    let start = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (o, n) = (&old[start..], &new[start..]);
    let end = o.iter().rev().zip(n.iter().rev()).take_while(|(a, b)| a == b).count();
    let mut out = keyed(&o[..o.len() - end], &n[..n.len() - end], key);
    for s in &mut out {
        s.at += start;
    }
    out
}

fn keyed<T: PartialEq + Clone, K: Hash + Eq>(
    old: &[T],
    new: &[T],
    key: impl Fn(&T) -> K,
) -> Vec<Splice<T>> {
    // FxHash: the keys are the content script's own element numbers.
    let in_new: FxHashSet<K> = new.iter().map(&key).collect();
    let old_at: FxHashMap<K, usize> = old.iter().enumerate().map(|(i, t)| (key(t), i)).collect();
    if in_new.len() != new.len() || old_at.len() != old.len() {
        // Keys repeat: matched by value at the ends only.
        return splice_ends(old, new);
    }
    // (at, remove, first new, past the last new) of each run of changes.
    let mut runs: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut open: Option<(usize, usize, usize, usize)> = None;
    let (mut i, mut j) = (0, 0);
    let run = |open: &mut Option<_>, i: usize, j: usize| {
        open.get_or_insert((i, 0, j, j));
    };
    while i < old.len() || j < new.len() {
        let removed = i < old.len() && (j == new.len() || !in_new.contains(&key(&old[i])));
        if removed {
            run(&mut open, i, j);
            if let Some(r) = open.as_mut() {
                r.1 += 1;
            }
            i += 1;
            continue;
        }
        match old_at.get(&key(&new[j])) {
            Some(&p) if p == i => {
                if old[i] == new[j] {
                    runs.extend(open.take());
                } else {
                    run(&mut open, i, j);
                    if let Some(r) = open.as_mut() {
                        r.1 += 1;
                        r.3 = j + 1;
                    }
                }
                i += 1;
                j += 1;
            }
            // Needed further on: this old item goes, and comes back there.
            Some(&p) if p > i => {
                run(&mut open, i, j);
                if let Some(r) = open.as_mut() {
                    r.1 += 1;
                }
                i += 1;
            }
            _ => {
                run(&mut open, i, j);
                if let Some(r) = open.as_mut() {
                    r.3 = j + 1;
                }
                j += 1;
            }
        }
    }
    runs.extend(open);
    runs.into_iter()
        .filter_map(|(at, remove, a, b)| {
            let (mut at, mut remove, mut a, mut b) = (at, remove, a, b);
            while remove > 0 && a < b && old[at] == new[a] {
                (at, remove, a) = (at + 1, remove - 1, a + 1);
            }
            while remove > 0 && a < b && old[at + remove - 1] == new[b - 1] {
                (remove, b) = (remove - 1, b - 1);
            }
            (remove > 0 || a < b).then(|| Splice { at, remove, insert: new[a..b].to_vec() })
        })
        .collect()
}

/// The splice that turns `old` into `new`: one run between what they
/// share at the start and at the end.
pub fn splice_ends<T: PartialEq + Clone>(old: &[T], new: &[T]) -> Vec<Splice<T>> {
    let start = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let end = old[start..]
        .iter()
        .rev()
        .zip(new[start..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (remove, insert) = (old.len() - start - end, &new[start..new.len() - end]);
    if remove == 0 && insert.is_empty() {
        return Vec::new();
    }
    vec![Splice { at: start, remove, insert: insert.to_vec() }]
}

/// `base` with `splices` applied; `None` when they do not fit it (out of
/// range, overlapping or out of order).
pub fn apply<T: Clone>(base: &[T], splices: &[Splice<T>]) -> Option<Vec<T>> {
    let mut out = Vec::with_capacity(base.len());
    let mut from = 0;
    for s in splices {
        let end = s.at.checked_add(s.remove)?;
        if s.at < from || end > base.len() {
            return None;
        }
        out.extend_from_slice(&base[from..s.at]);
        out.extend(s.insert.iter().cloned());
        from = end;
    }
    out.extend_from_slice(&base[from..]);
    Some(out)
}

impl Observation {
    /// Makes this observation whole again, when it came as a diff against
    /// `held` (the one the host kept); unchanged otherwise.
    pub fn resolve(mut self, held: Option<&Observation>) -> Result<Observation, DiffError> {
        let Some(diff) = self.diff.take() else { return Ok(self) };
        let held = match held {
            Some(h) if h.seq == diff.base => h,
            other => {
                return Err(DiffError::OtherBase {
                    base: diff.base,
                    held: other.map_or(0, |h| h.seq),
                });
            }
        };
        self.elements = apply(&held.elements, &diff.elements)
            .ok_or(DiffError::DoesNotFit { what: "element list", at: first_at(&diff.elements) })?;
        let lines: Vec<String> = held.text.split('\n').map(str::to_owned).collect();
        self.text = apply(&lines, &diff.lines)
            .ok_or(DiffError::DoesNotFit { what: "text", at: first_at(&diff.lines) })?
            .join("\n");
        Ok(self)
    }
}

fn first_at<T>(s: &[Splice<T>]) -> usize {
    s.first().map_or(0, |s| s.at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(old: &[u32], new: &[u32]) -> Vec<Splice<u32>> {
        let s = splices(old, new, |v| *v);
        assert_eq!(apply(old, &s).unwrap(), new, "{old:?} -> {new:?}: {s:?}");
        s
    }

    #[test]
    fn keyed_splices_rebuild_the_new_list() {
        assert!(check(&[1, 2, 3], &[1, 2, 3]).is_empty());
        assert_eq!(
            check(&[1, 2, 3], &[1, 9, 2, 3]),
            vec![Splice { at: 1, remove: 0, insert: vec![9] }]
        );
        assert_eq!(
            check(&[1, 2, 3, 4], &[1, 4]),
            vec![Splice { at: 1, remove: 2, insert: vec![] }]
        );
        assert_eq!(check(&[1, 2, 3, 4, 5, 6], &[1, 7, 3, 4, 5, 8]).len(), 2);
        check(&[], &[1, 2]);
        check(&[1, 2], &[]);
        check(&[1, 2, 3, 4], &[4, 3, 2, 1]);
        check(&[1, 2, 3, 4, 5], &[3, 1, 2, 5, 4]);
        check(&[1, 1, 2], &[2, 1, 1, 1]);
        // Every permutation with insertions and removals, small.
        let all: Vec<Vec<u32>> =
            (0u32..64).map(|mask| (0..6).filter(|b| mask & (1 << b) != 0).collect()).collect();
        for a in &all {
            for b in &all {
                check(a, b);
                let rev: Vec<u32> = b.iter().rev().copied().collect();
                check(a, &rev);
            }
        }
    }

    #[test]
    fn a_changed_value_under_the_same_key_is_replaced() {
        let old = [(1, "a"), (2, "b"), (3, "c")];
        let new = [(1, "a"), (2, "B"), (3, "c")];
        let s = splices(&old, &new, |v| v.0);
        assert_eq!(s, vec![Splice { at: 1, remove: 1, insert: vec![(2, "B")] }]);
    }

    #[test]
    fn unkeyed_splices_trim_the_shared_ends() {
        let s = splice_ends(&["a", "b", "c", "d"], &["a", "x", "y", "d"]);
        assert_eq!(s, vec![Splice { at: 1, remove: 2, insert: vec!["x", "y"] }]);
        assert!(splice_ends(&["a"], &["a"]).is_empty());
        assert_eq!(
            apply(&["a", "a"], &splice_ends(&["a", "a"], &["a", "a", "a"])).unwrap(),
            ["a"; 3]
        );
    }

    #[test]
    fn a_diff_that_does_not_fit_is_refused() {
        assert!(apply(&[1, 2], &[Splice { at: 1, remove: 2, insert: vec![] }]).is_none());
        let twice = [
            Splice { at: 1, remove: 1, insert: vec![] },
            Splice { at: 0, remove: 0, insert: vec![7] },
        ];
        assert!(apply(&[1, 2], &twice).is_none());
        assert!(apply(&[1, 2], &[Splice { at: usize::MAX, remove: 2, insert: vec![] }]).is_none());
    }

    fn element(index: u32, name: &str) -> ElementInfo {
        ElementInfo { index, tag: "button".into(), name: name.into(), ..Default::default() }
    }

    #[test]
    fn an_observation_comes_back_whole_from_its_diff() {
        let held = Observation {
            seq: 7,
            elements: vec![element(1, "a"), element(2, "b"), element(3, "c")],
            text: "[1]<button>a\n[2]<button>b\n[3]<button>c\n".into(),
            ..Default::default()
        };
        let whole = Observation {
            seq: 8,
            elements: vec![element(1, "a"), element(2, "changed"), element(4, "d")],
            text: "[1]<button>a\n[2]<button>changed\n[4]<button>d\n".into(),
            ..Default::default()
        };
        // As the content script makes it (`extension/src/sent.rs`).
        let lines = |o: &Observation| o.text.split('\n').map(str::to_owned).collect::<Vec<_>>();
        let diff = ObservationDiff {
            base: 7,
            elements: splices(&held.elements, &whole.elements, |e| e.index),
            lines: splice_ends(&lines(&held), &lines(&whole)),
        };
        assert_eq!(diff.elements.len(), 1, "{diff:?}");
        let sent = Observation {
            diff: Some(diff),
            elements: vec![],
            text: String::new(),
            ..whole.clone()
        };
        let json = serde_json::to_string(&sent).unwrap();
        let back: Observation = serde_json::from_str(&json).unwrap();
        assert_eq!(back.resolve(Some(&held)).unwrap(), whole);
        // Against another base: refused.
        let other = Observation { seq: 6, ..held.clone() };
        let sent: Observation = serde_json::from_str(&json).unwrap();
        assert_eq!(
            sent.clone().resolve(Some(&other)),
            Err(DiffError::OtherBase { base: 7, held: 6 })
        );
        assert!(sent.resolve(None).is_err());
        // A whole observation needs nothing.
        assert_eq!(whole.clone().resolve(None).unwrap(), whole);
    }
}
