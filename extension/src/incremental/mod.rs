//! Re-observation that re-reads only what changed.
//!
//! The previous observation's lines (what the walk saw of each element,
//! heading and text) are kept, each with its *anchor*: the node of the top
//! document's light tree it came from (the outermost shadow host for what a
//! shadow tree shows, the `<iframe>` for what a same-origin frame shows).
//! Lines are in the document order of their anchors, so the lines a
//! subtree produced are one contiguous run, found by binary search with
//! `compareDocumentPosition`.
//!
//! A `MutationObserver` (on the document, every open shadow root walked and
//! every same-origin frame's document walked) and `input`/`change`/`scroll`
//! listeners (on the window and those frames' windows) say which nodes
//! changed. Each change is widened to a *segment* the walk starts and ends
//! with a clean break, so that its lines depend on nothing around it but
//! the parent's style, the scroll box around it and the window (`Kind`):
//! the outermost element around the change that collects text (a listed
//! element) when it is still where it was; else a frame whose content
//! changed; else an element without text that showed nothing; else the nearest
//! block-level ancestor outside every element that collects text. Only the
//! segments are walked again and their lines spliced in. Whether a change
//! is too large is decided from the kept lines before walking, so that a
//! fall-back costs no more than the whole-page walk it ends in.
//!
//! Everything else is kept only while the layout around it is unchanged:
//! same window size and scroll, no scroll of any box, the same document
//! size, every listed element in the viewport still where it was and still
//! uncovered (its hit test repeated where a re-walked segment now paints),
//! every element left out as covered still covered, every usable element
//! left out with an empty box still empty (an image that came gives it one
//! with no mutation), the elements next to
//! each segment still where they were, every frame kept still showing the
//! same document at the same place, size and scroll with nothing changed
//! over it, every form field still holding the value it had. A page walked
//! without `aria-hidden` (everything usable was under it) is re-read in the
//! same mode while the lines outside `aria-hidden` subtrees still hold
//! nothing usable in view. Anything else — a change in `<head>`, a node
//! moved, many changes, a change of `<html>` or `<body>` themselves, a
//! frame in a shadow tree or in another frame, a failed check — makes the
//! observation a full one, and `Observation.fallback` says why. The
//! end-to-end tests compare both kinds on fixture pages.
//!
//! What a cross-origin frame shows changes unseen from here: such a frame
//! (of the top document's light tree) is asked again by every observation,
//! its kept lines (anchored at its `<iframe>`) replaced by its answer
//! ([`take_frames`], [`put_frames`]), while the rest is re-read in place;
//! the frame itself is kept only while it is where it was with nothing
//! changed over it.
//!
//! Here: the kept lines and the entry points; `watcher.rs` (what changed),
//! `segments.rs` (what to walk again) and `layout.rs` (whether the rest
//! still holds).

use crate::proto;
use std::cell::RefCell;

use errand_protocol::{Rect, Viewport};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{
    Document, Element, Event, HtmlInputElement, HtmlTextAreaElement, MutationObserver,
    MutationObserverInit, MutationRecord, Node,
};

use crate::dom::{DOCUMENT_NODE, FRAGMENT_NODE};
use crate::frames::{Pending, View};
use crate::observe::{self, Ctx, Frame, FrameSeen, Walk, style_cache};
use crate::text::{Line, Seen};

mod layout;
mod segments;
mod watcher;

pub(crate) use watcher::listeners_found;
pub use watcher::{end, take_changes};
#[allow(unused_imports)]
use {layout::*, segments::*, watcher::*};

/// More changed nodes than this: observe the whole page again.
const MAX_CHANGES: usize = 64;
/// Listed elements checked on each side of a re-walked segment.
const NEIGHBOURS: usize = 3;

/// The previous observation, kept to start the next one from.
struct Cache {
    document: Document,
    lines: Vec<Line>,
    nodes: Vec<Option<Element>>,
    anchors: Vec<Node>,
    clips: Vec<Rect>,
    /// Per line: inside an `aria-hidden` subtree (walked without
    /// `aria-hidden` only).
    hidden: Vec<bool>,
    /// Walked without `aria-hidden`: nothing usable in view was left with it.
    ignore_aria_hidden: bool,
    covered: Vec<observe::Covered>,
    /// Usable elements left out with an empty box (`Walk::empty`).
    empty: Vec<Element>,
    opened: js_sys::Set,
    /// The same-origin frames walked into (their lines anchored at them).
    frames: Vec<FrameSeen>,
    /// The cross-origin frames asked (their lines anchored at them), in
    /// document order; empty while they are asked again.
    remote: Vec<RemoteSeen>,
    /// Their lines are out of `lines` while their answers are awaited.
    asking: bool,
    /// Why the next observation may not start from this one, if so.
    unusable: Option<Fallback>,
    viewport: Viewport,
    /// The lines as last written (`observe::finish`); `None` for lines
    /// walked since, empty when none can be reused.
    rendered: Vec<Option<observe::Rendered>>,
}

/// A cross-origin frame of the top document's light tree, asked for its
/// lines by the last observation.
struct RemoteSeen {
    iframe: Element,
    /// Its box then, in the top viewport.
    rect: Rect,
    view: View,
}

/// Why an observation walked the whole page (`Observation.fallback`).
pub(crate) type Fallback = &'static str;

/// What changed since the last observation.
#[derive(Default)]
pub struct Changes {
    /// Nothing is known of what happened before (a new watcher).
    unknown: bool,
    /// Nodes whose attributes, children or text changed, and fields typed in.
    dirty: Vec<Node>,
    /// Of those, the targets of changed children or text (the rest only
    /// changed attributes or values).
    content: Vec<Node>,
    /// Nodes whose `aria-hidden` or `inert` changed.
    hiding: Vec<Node>,
    added: Vec<Node>,
    removed: Vec<Node>,
    too_many: bool,
    /// Something in `<head>` other than the title changed (styles, say).
    styling: bool,
    /// The window or a box in it scrolled.
    scrolled: bool,
}

struct Watcher {
    document: Document,
    observer: MutationObserver,
    _on_records: Closure<dyn FnMut(js_sys::Array)>,
    _on_event: Closure<dyn FnMut(Event)>,
    /// Shadow roots observed already.
    shadows: Vec<web_sys::ShadowRoot>,
    /// Same-origin frames' documents observed already.
    frames: Vec<Document>,
}

thread_local! {
    static CACHE: RefCell<Option<Cache>> = const { RefCell::new(None) };
    static WATCHER: RefCell<Option<Watcher>> = const { RefCell::new(None) };
    static CHANGES: RefCell<Changes> = RefCell::new(Changes::default());
}

/// Forgets the kept observation: the next one walks the whole page.
pub(crate) fn forget() {
    CACHE.with(|c| *c.borrow_mut() = None);
}

/// Whether a walk of `document` is kept.
pub(crate) fn kept_for(document: &Document) -> bool {
    CACHE.with(|c| c.borrow().as_ref().is_some_and(|c| c.document == *document))
}

/// Keeps a full walk's result for the next observation.
pub(crate) fn store(walk: Walk, document: &Document, viewport: &Viewport) {
    watch(&walk.shadows, &walk.frames);
    let unusable = walk.saw_frame.then_some("the page has a frame in a shadow tree or frame");
    CACHE.with(|c| {
        *c.borrow_mut() = Some(Cache {
            document: document.clone(),
            lines: walk.lines,
            nodes: walk.nodes,
            anchors: walk.anchors,
            clips: walk.line_clips,
            hidden: walk.line_hidden,
            ignore_aria_hidden: walk.ignore_aria_hidden,
            covered: walk.covered,
            empty: walk.empty,
            opened: walk.opened,
            frames: walk.frames,
            remote: Vec::new(),
            asking: false,
            unusable,
            viewport: *viewport,
            rendered: Vec::new(),
        })
    });
}

/// Takes the lines of the kept cross-origin frames out, to ask the frames
/// again: where each one's new lines go. Until [`put_frames`], the next
/// observation cannot start from this one.
pub(crate) fn take_frames() -> Vec<Pending> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let Some(cache) = c.as_mut().filter(|c| !c.remote.is_empty()) else {
            return Vec::new();
        };
        cache.asking = true;
        let rendered = cache.rendered.len() == cache.lines.len();
        let mut out = Vec::new();
        // From the first on: each range is found in the lines as they are
        // once the frames before it are out, where its answer goes back.
        for f in std::mem::take(&mut cache.remote) {
            let (lo, hi) = range(cache, &f.iframe);
            cache.lines.drain(lo..hi);
            cache.nodes.drain(lo..hi);
            cache.anchors.drain(lo..hi);
            cache.clips.drain(lo..hi);
            cache.hidden.drain(lo..hi);
            if rendered {
                cache.rendered.drain(lo..hi);
            }
            out.push(Pending { at: lo, iframe: f.iframe, view: f.view, rect: f.rect });
        }
        out
    })
}

/// Puts the cross-origin frames' `answers` where the walk (or
/// [`take_frames`]) left their places, anchored at their iframes, and keeps
/// the frames to ask again.
pub(crate) fn put_frames(pending: Vec<Pending>, answers: Vec<Vec<Line>>) {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let Some(cache) = c.as_mut() else { return };
        let rendered = cache.rendered.len() == cache.lines.len();
        // From the last, so the earlier places hold.
        for (p, lines) in pending.iter().zip(answers).rev() {
            let at = p.at.min(cache.lines.len());
            let n = lines.len();
            let anchor: &Node = p.iframe.unchecked_ref();
            cache.nodes.splice(at..at, std::iter::repeat_n(None, n));
            cache.anchors.splice(at..at, std::iter::repeat_n(anchor.clone(), n));
            cache.clips.splice(at..at, std::iter::repeat_n(p.view.clip, n));
            cache.hidden.splice(at..at, std::iter::repeat_n(false, n));
            if rendered {
                cache.rendered.splice(at..at, std::iter::repeat_with(|| None).take(n));
            }
            cache.lines.splice(at..at, lines);
        }
        cache.remote = pending
            .into_iter()
            .map(|p| RemoteSeen { iframe: p.iframe, rect: p.rect, view: p.view })
            .collect();
        cache.asking = false;
    })
}

/// Runs `write` (Errand's own DOM writes) unseen by this module's observer.
pub(crate) fn own_writes<T>(write: impl FnOnce() -> T) -> T {
    let observer = WATCHER.with(|w| w.borrow().as_ref().map(|w| w.observer.clone()));
    crate::dom::writes_unseen(observer.as_ref(), record, write)
}

/// Runs `f` on the kept lines (the current observation's, once `store` or
/// `reobserve` ran).
pub(crate) fn with_lines<T>(
    f: impl FnOnce(
        &mut [Line],
        &[Option<Element>],
        &mut Vec<Option<observe::Rendered>>,
    ) -> Result<T, String>,
) -> Result<T, String> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let c = c.as_mut().ok_or("nothing observed")?;
        f(&mut c.lines, &c.nodes, &mut c.rendered)
    })
}

/// Brings the kept observation up to date by re-walking only what changed.
/// `Err` (why) when that cannot be done with certainty: the caller walks
/// the whole page. Otherwise how many subtrees were walked again.
pub(crate) fn reobserve(
    changes: Changes,
    document: &Document,
    top: &Frame,
    viewport: &Viewport,
    origin: &str,
) -> Result<usize, Fallback> {
    if changes.unknown {
        return Err("nothing observed before");
    }
    if changes.too_many {
        return Err("too many changes");
    }
    if changes.styling {
        return Err("<head> changed");
    }
    if changes.scrolled {
        return Err("scrolled");
    }
    // A node moved (removed and added again) breaks the document order of
    // the kept lines.
    if changes.added.iter().any(|a| changes.removed.contains(a)) {
        return Err("a node moved");
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let cache = c.as_mut().ok_or("nothing observed before")?;
        if let Some(why) = cache.unusable {
            return Err(why);
        }
        if cache.asking {
            return Err("the last observation's frames had not answered yet");
        }
        if cache.document != *document {
            return Err("another document");
        }
        if cache.viewport != *viewport {
            return Err("the window was resized or scrolled");
        }
        // A scrolled box whose `scroll` event is not dispatched yet (that
        // waits for the next frame): its listed scroll position tells.
        let box_scrolled = cache.lines.iter().zip(&cache.nodes).any(|(line, node)| {
            matches!((line, node), (Line::Element(seen), Some(el))
                if seen.scroll.is_some_and(|sc| (f64::from(proto::scroll_top(&el)) - sc.above).abs() > 0.5))
        });
        if box_scrolled {
            return Err("a box scrolled");
        }
        let roots = segments(&changes, document, cache)?;
        // Decided before walking, so that falling back costs no more than
        // the whole-page walk itself: most of the page changed.
        let kept: usize = roots.iter().map(|(s, _)| range(cache, s)).map(|(lo, hi)| hi - lo).sum();
        if kept * 2 > cache.lines.len() {
            return Err("most of the page changed");
        }
        let mut fresh: Vec<(usize, usize)> = Vec::new();
        let mut areas: Vec<Rect> = Vec::new();
        let mut frames: Vec<FrameSeen> = Vec::new();
        // From the last segment back, so earlier indices stay right.
        for (s, kind) in roots.iter().rev() {
            let (lo, hi) = range(cache, s);
            if skipped(s, cache.ignore_aria_hidden) {
                return Err("a changed part is inert or aria-hidden");
            }
            let mut walk = Walk::new(origin.to_owned(), cache.ignore_aria_hidden);
            walk.opened = cache.opened.clone();
            if cache.ignore_aria_hidden {
                let above = proto::parent_element(&s).and_then(|p| proto::closest(&p, HIDDEN).ok().flatten());
                walk.hidden_depth = usize::from(above.is_some());
            }
            if let Some(clip) = clip_around(s, top) {
                walk.clips.push(clip);
            }
            walk.visit(s, top, ctx_of(s).ok_or("a changed part's parent is not known")?);
            walk.flush();
            if walk.saw_frame {
                return Err("a changed part holds a frame in a shadow tree");
            }
            if !walk.remote.is_empty() {
                return Err("a changed part holds cross-origin frames");
            }
            // Watched from now on: what is in them was just read.
            watch(&walk.shadows, &[]);
            // The walk must still break before and after the segment.
            let bits = style_cache::get(s).ok_or("a changed part's style is not known")?;
            match kind {
                Kind::Block if !bits.block || bits.skip => {
                    return Err("a changed part is no longer a block");
                }
                Kind::Listed => {
                    let still = matches!((walk.lines.first(), walk.nodes.first()),
                        (Some(Line::Element(seen)), Some(Some(el))) if el == s && seen.scroll.is_none());
                    if !still {
                        return Err("a changed element is no longer listed");
                    }
                }
                // Its styles (and those of what is inside) were just read.
                Kind::Empty if !walk.lines.is_empty() || !flows_alone(s) => {
                    return Err("an empty changed element now shows");
                }
                Kind::Frame if !walk.frames.iter().any(|f| f.iframe == *s && f.breaks) => {
                    return Err("a changed frame no longer shows as a block");
                }
                _ => {}
            }
            painted(s, &mut areas);
            let n = walk.lines.len();
            cache.covered.retain(|c| !contains(s, &c.el));
            cache.covered.extend(walk.covered);
            cache.empty.retain(|e| !contains(s, e));
            cache.empty.extend(walk.empty);
            cache.empty.truncate(observe::MAX_EMPTY);
            cache.frames.retain(|f| !proto::contains(&s, Some(&f.iframe)));
            // One the walk met again ended this above; one it did not is
            // hidden or covered now.
            cache.remote.retain(|f| !proto::contains(&s, Some(&f.iframe)));
            frames.extend(walk.frames);
            cache.lines.splice(lo..hi, walk.lines);
            cache.nodes.splice(lo..hi, walk.nodes);
            cache.anchors.splice(lo..hi, walk.anchors);
            cache.clips.splice(lo..hi, walk.line_clips);
            cache.hidden.splice(lo..hi, walk.line_hidden);
            if cache.rendered.len() >= hi {
                cache.rendered.splice(lo..hi, std::iter::repeat_with(|| None).take(n));
            }
            let delta = n as isize - (hi - lo) as isize;
            for f in fresh.iter_mut() {
                f.0 = (f.0 as isize + delta) as usize;
                f.1 = (f.1 as isize + delta) as usize;
            }
            fresh.push((lo, lo + n));
        }
        // Watched from now on (a frame's new document, say).
        watch(&[], &frames);
        // Most of the page walked again: the checks would cost more than
        // they save.
        let rewalked: usize = fresh.iter().map(|(a, b)| b - a).sum();
        if rewalked * 2 > cache.lines.len() {
            return Err("most of the page was walked again");
        }
        still_laid_out(cache, &fresh, &areas, top, &changes.dirty)?;
        cache.frames.extend(frames);
        // A page that hides everything usable with `aria-hidden` is walked
        // again without it. Whether the first walk finds something usable
        // in view: what the lines outside `aria-hidden` subtrees say (the
        // two walks list the same elements there).
        let usable = |hidden_too: bool| {
            cache.lines.iter().zip(&cache.hidden).any(|(l, &h)| {
                matches!(l, Line::Element(s) if s.in_viewport && s.index > 0) && (hidden_too || !h)
            })
        };
        if !cache.ignore_aria_hidden {
            if !usable(false) {
                return Err("nothing usable in view");
            }
        } else if usable(false) {
            return Err("something usable in view outside aria-hidden");
        } else if !cache.hidden.iter().any(|&h| h) {
            return Err("nothing left in aria-hidden");
        }
        Ok(roots.len())
    })
}
