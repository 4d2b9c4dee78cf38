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

use errand_protocol::{ElementInfo, Observation, ObservationDiff, splice_ends, splices};

struct Sent {
    seq: u64,
    elements: Vec<Shared>,
    lines: Vec<String>,
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
    let lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
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
                    lines: splice_ends(&prev.lines, &lines),
                });
                obs.elements = Vec::new();
                obs.text = String::new();
            }
            None => {
                obs.diff = None;
                obs.elements = elements.iter().map(|e| (*e.0).clone()).collect();
                obs.text = text;
            }
        }
        *s = Some(Sent { seq, elements, lines });
    });
}
