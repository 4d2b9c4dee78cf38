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
//! every element left out as covered still covered, the elements next to
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

fn options() -> MutationObserverInit {
    let init = MutationObserverInit::new();
    init.set_subtree(true);
    init.set_child_list(true);
    init.set_attributes(true);
    init.set_character_data(true);
    init
}

/// Records one batch of mutations.
fn record(records: js_sys::Array) {
    CHANGES.with(|c| {
        let mut c = c.borrow_mut();
        for r in records.iter() {
            let r: MutationRecord = r.unchecked_into();
            let Some(target) = r.target() else { continue };
            let in_head = proto::node_name(&target).eq_ignore_ascii_case("head")
                || proto::parent_element(&target).is_some_and(|p| proto::local_name(&p) == "head");
            let title = proto::node_name(&target).eq_ignore_ascii_case("title")
                || proto::parent_element(&target).is_some_and(|p| proto::local_name(&p) == "title");
            // A frame's styles are read afresh each time its content is walked.
            if in_head && !title && !in_frame(&target) {
                c.styling = true;
            }
            let (added, removed) = (r.added_nodes(), r.removed_nodes());
            if c.dirty.len() + (added.length() + removed.length()) as usize > MAX_CHANGES {
                c.too_many = true;
            }
            if c.too_many {
                continue;
            }
            for i in 0..added.length() {
                c.added.extend(added.item(i));
            }
            for i in 0..removed.length() {
                c.removed.extend(removed.item(i));
            }
            if r.type_() == "attributes" {
                let name = r.attribute_name();
                if matches!(name.as_deref(), Some("aria-hidden" | "inert"))
                    && !c.hiding.contains(&target)
                {
                    c.hiding.push(target.clone());
                }
            } else if !c.content.contains(&target) {
                c.content.push(target.clone());
            }
            if !c.dirty.contains(&target) {
                c.dirty.push(target);
            }
        }
    });
}

/// A node of this window or of a same-origin frame's (whose objects are
/// no `instanceof` this window's classes).
fn as_node(v: impl Into<JsValue>) -> Option<Node> {
    let v: JsValue = v.into();
    js_sys::Reflect::get(&v, &JsValue::from_str("nodeType"))
        .ok()
        .and_then(|t| t.as_f64())
        .map(|_| v.unchecked_into())
}

/// Whether `node` is in a document other than the watched one (a frame's).
fn in_frame(node: &Node) -> bool {
    let watched = WATCHER.with(|w| w.borrow().as_ref().map(|w| w.document.clone()));
    proto::owner_document(&node).is_some_and(|d| watched.is_some_and(|w| w != d))
}

/// Events after which something changed without a mutation: a scroll, a
/// field the person (or an action) typed in or changed, and a CSS
/// transition or animation that ended (what it faded in or out, moved or
/// unfolded shows now as it will stay).
const EVENTS: [&str; 6] =
    ["scroll", "input", "change", "transitionend", "animationend", "transitioncancel"];

/// Records one of [`EVENTS`].
fn on_event(e: Event) {
    let kind = e.type_();
    if kind == "scroll" {
        CHANGES.with(|c| c.borrow_mut().scrolled = true);
        return;
    }
    let Some(t) = e.target().and_then(as_node) else { return };
    if kind != "input" && kind != "change" {
        // Its computed style (and its descendants') is to be read again.
        crate::observe::style_cache::mark(&t);
    }
    changed(t);
}

/// Records `node` as changed without a mutation.
fn changed(t: Node) {
    CHANGES.with(|c| {
        let mut c = c.borrow_mut();
        if c.dirty.len() >= MAX_CHANGES {
            c.too_many = true;
        } else if !c.dirty.contains(&t) {
            c.dirty.push(t);
        }
    });
}

/// Records elements that were found to have listeners since the last
/// observation (`listeners.rs`): they may be listed now.
pub(crate) fn listeners_found(nodes: Vec<Node>) {
    for n in nodes {
        changed(n);
    }
}

/// Sets the watcher up for `document` (once), and takes what it saw since
/// the last observation.
pub fn take_changes(document: &Document) -> Changes {
    let fresh = WATCHER.with(|w| w.borrow().as_ref().is_none_or(|w| w.document != *document));
    if fresh {
        start(document);
        // Nothing is known about what happened before.
        CHANGES.with(|c| *c.borrow_mut() = Changes { unknown: true, ..Changes::default() });
    }
    let pending = WATCHER.with(|w| w.borrow().as_ref().map(|w| w.observer.take_records()));
    if let Some(p) = pending {
        record(p);
    }
    CHANGES.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

fn start(document: &Document) {
    WATCHER.with(|w| {
        if let Some(old) = w.borrow_mut().take() {
            old.observer.disconnect();
        }
    });
    let on_records = Closure::<dyn FnMut(js_sys::Array)>::new(record);
    let Ok(observer) = MutationObserver::new(on_records.as_ref().unchecked_ref()) else {
        return;
    };
    let Some(root) = proto::document_element(&document) else {
        return;
    };
    if observer.observe_with_options(&root, &options()).is_err() {
        return;
    }
    let on_event = Closure::<dyn FnMut(Event)>::new(on_event);
    if let Some(window) = proto::default_view(&document) {
        let f = on_event.as_ref().unchecked_ref();
        for kind in EVENTS {
            let _ = window.add_event_listener_with_callback_and_bool(kind, f, true);
        }
    }
    WATCHER.with(|w| {
        *w.borrow_mut() = Some(Watcher {
            document: document.clone(),
            observer,
            _on_records: on_records,
            _on_event: on_event,
            shadows: Vec::new(),
            frames: Vec::new(),
        })
    });
}

/// Ends an observation: Errand's own writes since it started (the marks)
/// are not the page's changes.
pub fn end() {
    WATCHER.with(|w| {
        if let Some(w) = w.borrow().as_ref() {
            let _ = w.observer.take_records();
        }
    });
    CHANGES.with(|c| *c.borrow_mut() = Changes::default());
}

/// Watches the shadow roots and frames a walk went into.
fn watch(shadows: &[web_sys::ShadowRoot], frames: &[FrameSeen]) {
    crate::ready::watch_shadows(shadows);
    WATCHER.with(|w| {
        let mut w = w.borrow_mut();
        let Some(w) = w.as_mut() else { return };
        for s in shadows {
            if !w.shadows.contains(s) {
                let _ = w.observer.observe_with_options(s, &options());
                w.shadows.push(s.clone());
            }
        }
        for f in frames {
            if w.frames.contains(&f.document) {
                continue;
            }
            // The document itself: a frame's document is often rewritten
            // whole (`document.open()`, an ad's), its root replaced.
            let _ = w.observer.observe_with_options(&f.document, &options());
            if let Some(window) = proto::default_view(&f.document) {
                let on_event = w._on_event.as_ref().unchecked_ref();
                for kind in EVENTS {
                    let _ = window.add_event_listener_with_callback_and_bool(kind, on_event, true);
                }
            }
            w.frames.push(f.document.clone());
        }
    });
}

/// Forgets the kept observation: the next one walks the whole page.
pub(crate) fn forget() {
    CACHE.with(|c| *c.borrow_mut() = None);
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

/// Elements the first walk leaves out with what is inside them.
const HIDDEN: &str = "[aria-hidden=true i]";

/// Whether the walk leaves `e` out: `inert`, or `aria-hidden` unless it is
/// the walk without it.
fn skipped(e: &Element, ignore_aria_hidden: bool) -> bool {
    proto::has_attribute(&e, "inert")
        || (!ignore_aria_hidden
            && proto::get_attribute(&e, "aria-hidden")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")))
}

/// What a segment is: why the walk breaks cleanly before and after it, so
/// that its lines can be walked again alone.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A block-level element.
    Block,
    /// An element listed with the text inside it (`listed_line`).
    Listed,
    /// An element without text that showed nothing and holds no block:
    /// its change shows only if it now does (`empty_alone`).
    Empty,
    /// A same-origin frame whose root element is a block.
    Frame,
}

/// Whether `node` is `s` or inside it, or inside a frame that is.
fn contains(s: &Element, node: &Element) -> bool {
    if proto::contains(&s, Some(node)) {
        return true;
    }
    let frame = proto::owner_document(&node)
        .and_then(|d| proto::default_view(&d))
        .and_then(|w| w.frame_element().ok().flatten());
    frame.is_some_and(|f| proto::contains(&s, Some(&f)))
}

/// The index of `s`'s own kept line when `s` was listed and collected the
/// text inside it (so the walk broke before and after it) and its box is
/// where it was (so nothing around it moved): then `s` alone can be walked
/// again. Not a scroll region (whose text is context text).
fn listed_line(cache: &Cache, s: &Element) -> Option<usize> {
    let (lo, hi) = range(cache, s);
    (lo < hi).then_some(lo).filter(|&lo| {
        matches!((&cache.lines[lo], &cache.nodes[lo]),
        (Line::Element(seen), Some(el)) if el == s && seen.scroll.is_none() && {
            let now = proto::get_bounding_client_rect(&s);
            (now.x(), now.y(), now.width(), now.height())
                == (seen.rect.x, seen.rect.y, seen.rect.width, seen.rect.height)
        })
    })
}

/// Elements inside an element changed alone (`empty_alone`) at most: each
/// is checked before and after its walk.
const ALONE_MAX: u32 = 16;

/// Whether `el`, changed only in its attributes, can be walked again alone
/// because it showed nothing and holds no text: no kept line, no text
/// inside it, and nothing that makes the walk break the context text
/// around it (`flows_alone`). A zero-size link around an empty icon is
/// one; walking the block around it (a page's whole masthead) would cost
/// a third of the page's walk.
fn empty_alone(el: &Element, changes: &Changes, cache: &Cache) -> bool {
    let node: &Node = el.unchecked_ref();
    if changes.hiding.contains(node)
        || changes.content.iter().any(|n| proto::contains(&el, Some(n)))
    {
        return false;
    }
    let (lo, hi) = range(cache, el);
    lo == hi && style_cache::get(el).is_some() && flows_alone(el)
}

/// Whether walking `el` writes no text and never breaks the context text
/// around it, by the styles last read: no text inside, no heading, frame
/// or shadow root (a walk breaks at those even when they show nothing),
/// no block-level box, and at most [`ALONE_MAX`] elements inside.
fn flows_alone(el: &Element) -> bool {
    if proto::text_content(&el).is_some_and(|t| !t.trim().is_empty()) {
        return false;
    }
    let inside = proto::get_elements_by_tag_name(el, "*");
    if inside.length() > ALONE_MAX {
        return false;
    }
    let quiet = |e: &Element| {
        !matches!(
            proto::local_name(&e).as_str(),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "iframe" | "frame"
        ) && proto::shadow_root(&e).is_none()
            // Never read: the walk did not reach it.
            && style_cache::get(e).is_none_or(|b| b.skip || !b.block)
    };
    quiet(el) && (0..inside.length()).filter_map(|i| inside.item(i)).all(|e| quiet(&e))
}

/// The segments to walk again for these changes, in document order, none
/// inside another; `Err` when the whole page must be walked.
fn segments(
    changes: &Changes,
    document: &Document,
    cache: &Cache,
) -> Result<Vec<(Element, Kind)>, Fallback> {
    let mut roots: Vec<(Element, Kind)> = Vec::new();
    'nodes: for node in &changes.dirty {
        let el = if proto::node_type(&node) == Node::ELEMENT_NODE {
            node.clone().unchecked_into::<Element>()
        } else if proto::node_type(&node) == DOCUMENT_NODE {
            // A frame's document whose root changed: its root stands for it
            // (the top document is not observed itself).
            match proto::document_element(&node.unchecked_ref::<Document>()) {
                Some(root) => root,
                None => return Err("a frame's document lost its root"),
            }
        } else {
            match proto::parent_element(&node) {
                Some(p) => p,
                None => continue,
            }
        };
        if !proto::is_connected(&el) {
            continue;
        }
        // Out of a shadow tree: its outermost host; out of a frame's
        // document: its iframe.
        let mut el = el;
        let mut from_frame = false;
        loop {
            el = outermost(el.unchecked_ref()).unchecked_into();
            let root = proto::get_root_node(&el);
            if root == *document.unchecked_ref::<Node>() {
                break;
            }
            // A frame's document (no `instanceof Document` here).
            let iframe = (proto::node_type(&root) == Node::DOCUMENT_NODE)
                .then(|| root.unchecked_ref::<Document>().clone())
                .and_then(|d| proto::default_view(&d))
                .and_then(|w| w.frame_element().ok().flatten());
            match iframe {
                Some(f) if cache.frames.iter().any(|s| s.iframe == f) => {
                    el = f;
                    from_frame = true;
                }
                // A frame the last walk did not go into: nor will this one
                // unless the iframe itself changed (then it is dirty too).
                Some(f) if proto::get_root_node(&f) == *document.unchecked_ref::<Node>() => {
                    continue 'nodes;
                }
                _ => return Err("a change in a frame not watched"),
            }
        }
        // The title is read afresh anyway; the rest of `<head>` is not walked.
        if proto::closest(&el, "head").ok().flatten().is_some() {
            if proto::closest(&el, "title").ok().flatten().is_some() {
                continue;
            }
            return Err("<head> changed");
        }
        // Inside a shadow host's light children, which show where its
        // slots put them (`observe.rs`): the outermost such host.
        let mut up = proto::parent_element(&el);
        while let Some(p) = up {
            up = proto::parent_element(&p);
            if proto::shadow_root(&p).is_some() {
                el = p;
            }
        }
        let Some((s, kind)) = segment_of(&el, from_frame, changes, cache)? else {
            continue;
        };
        if !roots.iter().any(|(r, _)| *r == s) {
            roots.push((s, kind));
        }
    }
    // Document order, and none inside another.
    roots.sort_by(|(a, _), (b, _)| {
        let pos = proto::compare_document_position(a, b);
        if a == b {
            std::cmp::Ordering::Equal
        } else if pos & Node::DOCUMENT_POSITION_FOLLOWING != 0 {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Greater
        }
    });
    let mut out: Vec<(Element, Kind)> = Vec::new();
    for r in roots {
        if out.last().is_some_and(|(o, _)| proto::contains(&o, Some(&r.0))) {
            continue;
        }
        out.push(r);
    }
    Ok(out)
}

/// The segment to walk again for a change of `el`: `Ok(None)` when the
/// walk never reaches `el` (it is inside something hidden), `Err` when only
/// the whole page will do. The outermost element around `el` that collects
/// text, alone when the walk listed it; else `el` alone when it is an empty
/// element or a frame whose content changed; else the nearest block
/// around.
fn segment_of(
    el: &Element,
    from_frame: bool,
    changes: &Changes,
    cache: &Cache,
) -> Result<Option<(Element, Kind)>, Fallback> {
    let skipped = |e: &Element| skipped(e, cache.ignore_aria_hidden);
    // Left out by the walk, and not because of this change: it was before.
    if !from_frame && skipped(el) && !changes.hiding.contains(el.unchecked_ref()) {
        return Ok(None);
    }
    let mut chain: Vec<Element> = Vec::new();
    let mut at = Some(el.clone());
    while let Some(e) = at {
        at = proto::parent_element(&e);
        chain.push(e);
    }
    let outermost_open = chain.iter().rposition(|e| cache.opened.has(e));
    let start = outermost_open.unwrap_or(0);
    // Is it reached by the walk? Every element above it is walked into.
    for (i, a) in chain.iter().enumerate().skip(start + 1) {
        let tag = proto::local_name(&a);
        let bits = style_cache::get(a);
        if bits.is_none_or(|b| b.skip)
            || skipped(a)
            || matches!(
                tag.as_str(),
                "select"
                    | "textarea"
                    | "svg"
                    | "math"
                    | "video"
                    | "audio"
                    | "canvas"
                    | "object"
                    | "iframe"
                    | "frame"
                    | "template"
                    | "noscript"
                    | "script"
                    | "style"
                    | "head"
            )
            || (tag == "details"
                && !proto::has_attribute(&a, "open")
                && proto::local_name(&chain[i - 1]) != "summary")
        {
            return Ok(None);
        }
    }
    let parent_label =
        |i: usize| chain.get(i + 1).is_some_and(|p| proto::local_name(&p) == "label");
    match outermost_open {
        Some(i)
            if !parent_label(i)
                && !matches!(proto::local_name(&chain[i]).as_str(), "body" | "html")
                && listed_line(cache, &chain[i]).is_some() =>
        {
            return Ok(Some((chain[i].clone(), Kind::Listed)));
        }
        None if from_frame && cache.frames.iter().any(|f| f.iframe == *el && f.breaks) => {
            return Ok(Some((el.clone(), Kind::Frame)));
        }
        None if !from_frame && empty_alone(el, changes, cache) => {
            return Ok(Some((el.clone(), Kind::Empty)));
        }
        _ => {}
    }
    for (i, e) in chain.iter().enumerate().skip(start) {
        let tag = proto::local_name(&e);
        if tag == "body" || tag == "html" {
            return Err("a change outside any block but <body>");
        }
        let block = style_cache::get(e).is_some_and(|b| b.block && !b.skip);
        if block && !parent_label(i) {
            return Ok(Some((e.clone(), Kind::Block)));
        }
    }
    Err("a change outside any block")
}

/// What the walk knows when it reaches `s`, from its parent's style.
fn ctx_of(s: &Element) -> Option<Ctx> {
    let parent = proto::parent_element(&s)?;
    let bits = style_cache::get(&parent)?;
    // A pointer given by a `:hover` rule is inherited by the walk, not by
    // CSS: any ancestor's counts (one not read last time: walk it all).
    let mut hover = false;
    let mut up = Some(parent.clone());
    while let Some(a) = up {
        if proto::local_name(&a) == "html" {
            break;
        }
        if style_cache::get(&a)?.hover {
            hover = true;
            break;
        }
        up = proto::parent_element(&a);
    }
    Some(Ctx {
        // As the walk passes it down: the parent's own cursor, or one
        // inherited from a `:hover` rule.
        pointer: bits.pointer || hover,
        grab: bits.grab,
        hover,
        text_hidden: !bits.shown && !bits.contents,
        dirty: false,
        row: row_around(&parent, bits)?,
    })
}

/// Whether the children of `parent` are items of a flex row (through
/// `display: contents` boxes, whose children are their parent's items).
fn row_around(parent: &Element, bits: crate::observe::StyleBits) -> Option<bool> {
    let (mut at, mut bits) = (parent.clone(), bits);
    while bits.contents {
        at = proto::parent_element(&at)?;
        bits = style_cache::get(&at)?;
    }
    Some(bits.row)
}

/// The visible part of the innermost scroll box around `s` as the walk
/// pushed it (each one cut to the ones around it), if any.
fn clip_around(s: &Element, top: &Frame) -> Option<Rect> {
    let mut boxes: Vec<Element> = Vec::new();
    let mut at = proto::parent_element(&s);
    while let Some(a) = at {
        at = proto::parent_element(&a);
        let tag = proto::local_name(&a);
        if matches!(tag.as_str(), "html" | "body") {
            continue;
        }
        if style_cache::get(&a).is_some_and(|b| b.scrolls && b.block && b.shown) {
            boxes.push(a);
        }
    }
    let mut clip: Option<Rect> = None;
    for b in boxes.iter().rev() {
        let extra = proto::scroll_height(&b) - proto::client_height(&b);
        if extra <= 8 || proto::client_height(&b) <= 0 {
            continue;
        }
        let r = proto::get_bounding_client_rect(&b);
        if r.width() <= 0.0 || r.height() <= 0.0 {
            continue;
        }
        let rect = observe::rect_of(&r);
        let outer = clip.unwrap_or(top.clip);
        clip = Some(observe::intersect(&rect, &outer).unwrap_or(Rect {
            width: 0.0,
            height: 0.0,
            ..rect
        }));
    }
    clip
}

/// Where a kept line's anchor is against `s`: before it (-1), in it (0),
/// after it (1). A node no longer in the document counts with the next
/// one that is (`None` past the end).
fn side(anchors: &[Node], i: usize, s: &Element) -> i8 {
    let mut j = i;
    while j < anchors.len() && !proto::is_connected(&anchors[j]) {
        j += 1;
    }
    let Some(a) = anchors.get(j) else { return 1 };
    if a == s.unchecked_ref::<Node>() {
        return 0;
    }
    let pos = proto::compare_document_position(s, a);
    if pos & Node::DOCUMENT_POSITION_CONTAINED_BY != 0 {
        0
    } else if pos & Node::DOCUMENT_POSITION_FOLLOWING != 0 {
        1
    } else {
        -1
    }
}

/// The kept lines of segment `s`, `lo..hi`, with the lines of nodes removed
/// from it.
fn range(cache: &Cache, s: &Element) -> (usize, usize) {
    let n = cache.anchors.len();
    let first_not = |want: i8| {
        // The first line whose side is at least `want`.
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if side(&cache.anchors, mid, s) < want {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let lo = first_not(0);
    let mut hi = first_not(1).max(lo);
    // Lines of removed nodes right after it are its own (the lines of a
    // later segment come from its nodes still in the document).
    while hi < n && !proto::is_connected(&cache.anchors[hi]) {
        hi += 1;
    }
    (lo, hi)
}

/// Whether the kept lines outside the re-walked ones still hold: nothing
/// moved, nothing newly covered or uncovered, no field changed its value.
fn still_laid_out(
    cache: &Cache,
    fresh: &[(usize, usize)],
    areas: &[Rect],
    top: &Frame,
    dirty: &[Node],
) -> Result<(), Fallback> {
    let is_fresh = |i: usize| fresh.iter().any(|&(a, b)| i >= a && i < b);
    let same = |now: &web_sys::DomRect, r: &Rect| {
        now.x() == r.x && now.y() == r.y && now.width() == r.width && now.height() == r.height
    };
    // An element of a frame is placed in its frame's viewport: the frame's
    // own checks below stand for it.
    let in_frame = |el: &Element| proto::owner_document(&el).is_some_and(|d| d != cache.document);
    let same_place = |el: &Element, r: &Rect| {
        (proto::is_connected(&el) && same(&proto::get_bounding_client_rect(&el), r)) || in_frame(el)
    };
    let root = proto::document_element(&cache.document).ok_or("the document has no root")?;
    if f64::from(proto::scroll_width(&root)) != cache.viewport.page_width
        || f64::from(proto::scroll_height(&root)) != cache.viewport.page_height
    {
        return Err("the page's size changed");
    }
    // The frames kept: the same document, where they were, the same size
    // and scroll, and nothing changed over them.
    for f in &cache.frames {
        let iframe = f.iframe.unchecked_ref::<web_sys::HtmlIFrameElement>();
        if !proto::is_connected(&f.iframe)
            || iframe.content_document().as_ref() != Some(&f.document)
        {
            return Err("a frame loaded another page");
        }
        let window = proto::default_view(&f.document).ok_or("a frame has no window")?;
        let size = |v: Result<JsValue, JsValue>| v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
        let scroll = (window.scroll_x().unwrap_or(0.0), window.scroll_y().unwrap_or(0.0));
        if !same(&proto::get_bounding_client_rect(&f.iframe), &f.rect)
            || (size(window.inner_width()), size(window.inner_height())) != f.size
            || scroll != f.scroll
        {
            return Err("a frame moved, was resized or scrolled");
        }
        if areas.iter().any(|a| observe::intersect(a, &f.rect).is_some()) {
            return Err("a change over a frame");
        }
    }
    // The cross-origin frames kept: where they were, the same size, and
    // nothing changed over them (what they show is asked again).
    for f in &cache.remote {
        let r = proto::get_bounding_client_rect(&f.iframe);
        let content =
            (r.x() + f64::from(f.iframe.client_left()), r.y() + f64::from(f.iframe.client_top()));
        if !proto::is_connected(&f.iframe)
            || !same(&r, &f.rect)
            || content != (f.view.dx, f.view.dy)
        {
            return Err("a cross-origin frame moved, was resized or removed");
        }
        if areas.iter().any(|a| observe::intersect(a, &f.rect).is_some()) {
            return Err("a change over a cross-origin frame");
        }
    }
    // The listed elements next to each re-walked run.
    for &(a, b) in fresh {
        let before = (0..a).rev().filter(|&i| matches!(cache.lines[i], Line::Element(_)));
        let after = (b..cache.lines.len()).filter(|&i| matches!(cache.lines[i], Line::Element(_)));
        for i in before.take(NEIGHBOURS).chain(after.take(NEIGHBOURS)) {
            if let (Line::Element(seen), Some(el)) = (&cache.lines[i], &cache.nodes[i]) {
                if !same_place(el, &seen.rect) {
                    return Err("an element next to a changed part moved");
                }
            }
        }
    }
    for (i, (line, node)) in cache.lines.iter().zip(&cache.nodes).enumerate() {
        let (Line::Element(seen), Some(el)) = (line, node) else {
            continue;
        };
        if is_fresh(i) {
            continue;
        }
        if seen.in_viewport {
            // In view: where it was, and — where something changed over it —
            // still the element a click there hits.
            let now = proto::get_bounding_client_rect(&el);
            let moved = !proto::is_connected(&el) || !same(&now, &seen.rect);
            if moved && !in_frame(el) {
                return Err("an element in view moved");
            }
            let changed_over = areas.iter().any(|a| observe::intersect(a, &seen.rect).is_some());
            if changed_over && !observe::uncovered(el, &now, top, &cache.clips[i]) && !in_frame(el)
            {
                return Err("an element in view was covered");
            }
        }
        if !same_value(el, seen) {
            return Err("a field's value changed without an event");
        }
    }
    // What was covered is still covered: asked again (five hit tests
    // each, a fraction of a millisecond) only when it or what covered it
    // moved or changed.
    let dirty: Vec<Node> = dirty.iter().map(outermost).collect();
    let touched = |n: &Node| {
        let n = outermost(n);
        dirty.iter().any(|d| proto::contains(&d, Some(&n)) || proto::contains(&n, Some(d)))
    };
    for c in &cache.covered {
        if !proto::is_connected(&c.el) || in_frame(&c.el) {
            continue;
        }
        let r = proto::get_bounding_client_rect(&c.el);
        let unchanged = !c.by.is_empty()
            && same(&r, &c.rect)
            && !touched(c.el.unchecked_ref())
            && c.by.iter().all(|(b, rect)| {
                proto::is_connected(&b)
                    && same(&proto::get_bounding_client_rect(&b), rect)
                    && !touched(b)
            });
        if unchanged {
            continue;
        }
        if r.width() > 0.0
            && r.height() > 0.0
            && observe::intersect(&observe::rect_of(&r), &c.clip).is_some()
            && observe::uncovered(&c.el, &r, top, &c.clip)
        {
            return Err("a covered element was uncovered");
        }
    }
    Ok(())
}

/// `node`, or the outermost shadow host it is in: what `contains` sees of
/// it from the document.
fn outermost(node: &Node) -> Node {
    let mut n = node.clone();
    loop {
        let root = proto::get_root_node(&n);
        if proto::node_type(&root) != FRAGMENT_NODE {
            return n;
        }
        n = root.unchecked_into::<web_sys::ShadowRoot>().host().unchecked_into();
    }
}

/// Adds where a re-walked segment paints now: its box and the box of every
/// element in it (a dialog in a portal is fixed over the page while its
/// container has no height). Hit tests are repeated only there: on a large
/// page each one costs a fraction of a millisecond.
fn painted(s: &Element, areas: &mut Vec<Rect>) {
    /// Beyond this many boxes, one box around them all.
    const MAX_AREAS: usize = 256;
    let mut add = |r: web_sys::DomRect| {
        if r.width() > 0.0 && r.height() > 0.0 {
            areas.push(observe::rect_of(&r));
        }
    };
    add(proto::get_bounding_client_rect(&s));
    if let Ok(all) = proto::query_selector_all(&s, "*") {
        if all.length() as usize > MAX_AREAS {
            // A large segment: count the whole window as changed rather
            // than read every box in it.
            let w = web_sys::window();
            let size = |v: Option<Result<JsValue, JsValue>>| {
                v.and_then(|v| v.ok()).and_then(|v| v.as_f64()).unwrap_or(f64::MAX)
            };
            let width = size(w.as_ref().map(|w| w.inner_width()));
            let height = size(w.as_ref().map(|w| w.inner_height()));
            areas.push(Rect { x: 0.0, y: 0.0, width, height });
            return;
        }
        for i in 0..all.length() {
            if let Some(e) = all.item(i) {
                add(proto::get_bounding_client_rect(&e.unchecked_ref::<Element>()));
            }
        }
    }
    if areas.len() > MAX_AREAS {
        let x0 = areas.iter().map(|r| r.x).fold(f64::INFINITY, f64::min);
        let y0 = areas.iter().map(|r| r.y).fold(f64::INFINITY, f64::min);
        let x1 = areas.iter().map(|r| r.x + r.width).fold(f64::NEG_INFINITY, f64::max);
        let y1 = areas.iter().map(|r| r.y + r.height).fold(f64::NEG_INFINITY, f64::max);
        *areas = vec![Rect { x: x0, y: y0, width: x1 - x0, height: y1 - y0 }];
    }
}

/// Whether a form field still holds the value (or check) it was seen with:
/// values change without mutations, and not every page fires events.
fn same_value(el: &Element, seen: &Seen) -> bool {
    match seen.tag.as_str() {
        "input" => {
            let input = el.unchecked_ref::<HtmlInputElement>();
            match seen.input_type.as_deref() {
                Some("checkbox" | "radio") => input.checked() == seen.checked,
                Some("password") => true,
                _ => seen.value.as_deref() == Some(input.value().as_str()),
            }
        }
        "textarea" => {
            seen.value.as_deref()
                == Some(el.unchecked_ref::<HtmlTextAreaElement>().value().as_str())
        }
        "select" => {
            let mut now = Seen::default();
            observe::read_select(el, &mut now);
            now.value == seen.value && now.options == seen.options
        }
        _ => true,
    }
}
