//! What the host was sent last, so that the next observation can be sent
//! as a diff against it (`Observation.diff`, see the protocol crate).
//!
//! Each observation of a document gets a number (`seq`); the host says
//! which one it holds (`since`). When that is the one sent last, only the
//! splices of the element list and of the text's lines go back — on a
//! large page a few records instead of thousands. Otherwise (the host
//! restarted, the reply was lost, another document) the whole observation.

use std::cell::RefCell;
use std::rc::Rc;

use errand_protocol::{ElementInfo, Observation, ObservationDiff, Splice, splice_ends, splices};

struct Sent {
    seq: u64,
    elements: Vec<Shared>,
    text: String,
}

thread_local! {
    static SENT: RefCell<Option<Sent>> = const { RefCell::new(None) };
}

/// An element record shared with the observation's kept lines: the same
/// record unchanged since, compared by address first.
#[derive(Clone)]
struct Shared(Rc<ElementInfo>);

impl PartialEq for Shared {
    fn eq(&self, other: &Shared) -> bool {
        Rc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

/// Fills in `obs.seq` and either `elements` and `text` or `diff`.
pub fn package(
    obs: &mut Observation,
    elements: Vec<Rc<ElementInfo>>,
    text: String,
    since: Option<u64>,
) {
    let elements: Vec<Shared> = elements.into_iter().map(Shared).collect();
    SENT.with(|s| {
        let mut s = s.borrow_mut();
        let seq = match s.as_ref() {
            Some(prev) => prev.seq + 1,
            // Numbers unlikely to be another document's (the host's `since`
            // may be for the page this tab showed before).
            None => (js_sys::Math::random() * (1u64 << 40) as f64) as u64 + 1,
        };
        obs.seq = seq;
        match s.as_ref().filter(|prev| since == Some(prev.seq)) {
            Some(prev) => {
                let unshare = |s: Vec<errand_protocol::Splice<Shared>>| {
                    s.into_iter()
                        .map(|s| errand_protocol::Splice {
                            at: s.at,
                            remove: s.remove,
                            insert: s.insert.into_iter().map(|e| (*e.0).clone()).collect(),
                        })
                        .collect()
                };
                obs.diff = Some(ObservationDiff {
                    base: prev.seq,
                    elements: unshare(splices(&prev.elements, &elements, |e| e.0.index)),
                    lines: line_splices(&prev.text, &text),
                });
                obs.elements = Vec::new();
                obs.text = String::new();
            }
            None => {
                obs.diff = None;
                obs.elements = elements.iter().map(|e| (*e.0).clone()).collect();
                obs.text = text.clone();
            }
        }
        *s = Some(Sent { seq, elements, text });
    });
}

/// The splices of the text's lines (`\n`-separated, as the host splits
/// them), compared as slices of the two texts: only the changed lines are
/// copied (on a large page thousands of lines, one or two changed).
fn line_splices(old: &str, new: &str) -> Vec<Splice<String>> {
    if old == new {
        return Vec::new();
    }
    let old: Vec<&str> = old.split('\n').collect();
    let new: Vec<&str> = new.split('\n').collect();
    splice_ends(&old, &new)
        .into_iter()
        .map(|s| Splice {
            at: s.at,
            remove: s.remove,
            insert: s.insert.into_iter().map(str::to_owned).collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_splices_rebuild_the_new_text() {
        let texts = ["", "a", "a\n", "\n", "a\nb", "a\nb\n", "a\nx\nb", "b\na", "a\n\nb", "x"];
        for old in texts {
            for new in texts {
                let base: Vec<String> = old.split('\n').map(str::to_owned).collect();
                let spliced = errand_protocol::apply(&base, &line_splices(old, new))
                    .map(|lines| lines.join("\n"));
                assert_eq!(spliced.as_deref(), Some(new), "{old:?} -> {new:?}");
            }
        }
        assert!(line_splices("a\nb", "a\nb").is_empty());
        let one = line_splices("a\nb\nc", "a\nB\nc");
        assert_eq!(one.len(), 1);
        assert_eq!(
            (one[0].at, one[0].remove, one[0].insert.as_slice()),
            (1, 1, &["B".to_owned()][..])
        );
    }
}
