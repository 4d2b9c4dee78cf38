//! Re-observation that re-reads only what changed.
//!
//! The previous observation's lines (what the walk saw of each element,
//! heading and text) are kept, each with its *anchor*: the node of the top
//! document's light tree it came from (the outermost shadow host for what a
//! shadow tree shows). Lines are in the document order of their anchors, so
//! the lines a subtree produced are one contiguous run, found by binary
//! search with `compareDocumentPosition`.
//!
//! A `MutationObserver` (on the document and every open shadow root walked)
//! and `input`/`change` listeners say which nodes changed. Each change is
//! widened to a *segment*: the nearest block-level ancestor outside every
//! element that collects text (a listed element, a heading), which the walk
//! starts and ends with a clean break — its lines depend on nothing around
//! it but the parent's style, the scroll box around it and the window. Only
//! the segments are walked again and their lines spliced in.
//!
//! Everything else is kept only while the layout around it is unchanged:
//! same window size and scroll, no scroll of any box, the same document
//! size, every listed element in the viewport still where it was and still
//! uncovered (its hit test repeated where a re-walked segment now paints),
//! every element left out as covered
//! still covered, the elements next to each segment still where they were,
//! every form field still holding the value it had. Anything else — a
//! change in `<head>`, a node moved, many changes, a change of `<html>` or
//! `<body>` themselves, an iframe, a failed check — makes the observation a
//! full one. The end-to-end tests compare both kinds on fixture pages.

use std::cell::RefCell;

use errand_protocol::{Rect, Viewport};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{
    Document, Element, Event, HtmlInputElement, HtmlTextAreaElement, MutationObserver,
    MutationObserverInit, MutationRecord, Node,
};

use crate::dom::FRAGMENT_NODE;
use crate::observe::{self, Ctx, Frame, Walk, style_cache};
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
    covered: Vec<(Element, Rect)>,
    opened: js_sys::Set,
    /// Why the next observation may not start from this one, if so.
    unusable: Option<Fallback>,
    viewport: Viewport,
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
            let in_head = target.node_name().eq_ignore_ascii_case("head")
                || target.parent_element().is_some_and(|p| p.local_name() == "head");
            let title = target.node_name().eq_ignore_ascii_case("title")
                || target.parent_element().is_some_and(|p| p.local_name() == "title");
            if in_head && !title {
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
            if !c.dirty.contains(&target) {
                c.dirty.push(target);
            }
        }
    });
}

/// Records a scroll, or a field the person (or an action) typed in or
/// changed: values change without mutations.
fn on_event(e: Event) {
    CHANGES.with(|c| {
        let mut c = c.borrow_mut();
        if e.type_() == "scroll" {
            c.scrolled = true;
        } else if let Some(t) = e.target().and_then(|t| t.dyn_into::<Node>().ok()) {
            if c.dirty.len() >= MAX_CHANGES {
                c.too_many = true;
            } else if !c.dirty.contains(&t) {
                c.dirty.push(t);
            }
        }
    });
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
    let Ok(observer) = MutationObserver::new(on_records.as_ref().unchecked_ref()) else { return };
    let Some(root) = document.document_element() else { return };
    if observer.observe_with_options(&root, &options()).is_err() {
        return;
    }
    let on_event = Closure::<dyn FnMut(Event)>::new(on_event);
    if let Some(window) = document.default_view() {
        let f = on_event.as_ref().unchecked_ref();
        for kind in ["scroll", "input", "change"] {
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

/// Keeps a full walk's result for the next observation.
pub(crate) fn store(walk: Walk, document: &Document, viewport: &Viewport) {
    WATCHER.with(|w| {
        if let Some(w) = w.borrow_mut().as_mut() {
            for s in &walk.shadows {
                if !w.shadows.contains(s) {
                    let _ = w.observer.observe_with_options(s, &options());
                    w.shadows.push(s.clone());
                }
            }
        }
    });
    let unusable = if walk.saw_frame {
        Some("the page has a frame")
    } else if walk.ignore_aria_hidden {
        Some("the page was walked again without aria-hidden")
    } else {
        None
    };
    CACHE.with(|c| {
        *c.borrow_mut() = Some(Cache {
            document: document.clone(),
            lines: walk.lines,
            nodes: walk.nodes,
            anchors: walk.anchors,
            clips: walk.line_clips,
            covered: walk.covered,
            opened: walk.opened,
            unusable,
            viewport: *viewport,
        })
    });
}

/// Takes the kept lines out (to splice cross-origin frames' lines in while
/// their answers are awaited); [`put_lines`] puts them back. The anchors
/// then no longer match: such an observation is never started from.
pub(crate) fn take_lines() -> Option<(Vec<Line>, Vec<Option<Element>>)> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let c = c.as_mut()?;
        c.unusable = Some("cross-origin frames");
        Some((std::mem::take(&mut c.lines), std::mem::take(&mut c.nodes)))
    })
}

/// Puts back what [`take_lines`] took.
pub(crate) fn put_lines(lines: Vec<Line>, nodes: Vec<Option<Element>>) {
    CACHE.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            c.lines = lines;
            c.nodes = nodes;
        }
    });
}

/// Runs `write` (Errand's own DOM writes) unseen by this module's observer.
pub(crate) fn own_writes<T>(write: impl FnOnce() -> T) -> T {
    let observer = WATCHER.with(|w| w.borrow().as_ref().map(|w| w.observer.clone()));
    crate::dom::writes_unseen(observer.as_ref(), record, write)
}

/// Runs `f` on the kept lines (the current observation's, once `store` or
/// `reobserve` ran).
pub(crate) fn with_lines<T>(
    f: impl FnOnce(&mut [Line], &[Option<Element>]) -> Result<T, String>,
) -> Result<T, String> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let c = c.as_mut().ok_or("nothing observed")?;
        f(&mut c.lines, &c.nodes)
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
                if seen.scroll.is_some_and(|sc| (f64::from(el.scroll_top()) - sc.above).abs() > 0.5))
        });
        if box_scrolled {
            return Err("a box scrolled");
        }
        let roots = segments(&changes.dirty, document, &cache.opened, |s| listed_line(cache, s))?;
        // Decided before walking, so that falling back costs no more than
        // the whole-page walk itself: most of the page changed.
        let kept: usize = roots.iter().map(|s| range(cache, s)).map(|(lo, hi)| hi - lo).sum();
        if kept * 2 > cache.lines.len() {
            return Err("most of the page changed");
        }
        let mut fresh: Vec<(usize, usize)> = Vec::new();
        let mut areas: Vec<Rect> = Vec::new();
        // From the last segment back, so earlier indices stay right.
        for s in roots.iter().rev() {
            let (lo, hi) = range(cache, s);
            if s.has_attribute("inert")
                || s.get_attribute("aria-hidden").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            {
                return Err("a changed part is inert or aria-hidden");
            }
            let listed = listed_line(cache, s).is_some();
            let mut walk = Walk::new(origin.to_owned(), false);
            walk.opened = cache.opened.clone();
            if let Some(clip) = clip_around(s, top) {
                walk.clips.push(clip);
            }
            walk.visit(s, top, ctx_of(s).ok_or("a changed part's parent is not known")?);
            walk.flush();
            if walk.saw_frame {
                return Err("a changed part holds a frame");
            }
            if !walk.remote.is_empty() {
                return Err("a changed part holds cross-origin frames");
            }
            if listed {
                // Still listed, collecting the text inside it: the walk
                // breaks before and after it.
                let still = matches!((walk.lines.first(), walk.nodes.first()),
                    (Some(Line::Element(seen)), Some(Some(el))) if el == s && seen.scroll.is_none());
                if !still {
                    return Err("a changed element is no longer listed");
                }
            } else {
                // The segment must still be a block the walk breaks at.
                let bits = style_cache::get(s).ok_or("a changed part's style is not known")?;
                if !bits.block || bits.skip {
                    return Err("a changed part is no longer a block");
                }
            }
            painted(s, &mut areas);
            let n = walk.lines.len();
            cache.covered.retain(|(el, _)| !s.contains(Some(el)));
            cache.covered.extend(walk.covered);
            cache.lines.splice(lo..hi, walk.lines);
            cache.nodes.splice(lo..hi, walk.nodes);
            cache.anchors.splice(lo..hi, walk.anchors);
            cache.clips.splice(lo..hi, walk.line_clips);
            let delta = n as isize - (hi - lo) as isize;
            for f in fresh.iter_mut() {
                f.0 = (f.0 as isize + delta) as usize;
                f.1 = (f.1 as isize + delta) as usize;
            }
            fresh.push((lo, lo + n));
            if !walk.shadows.is_empty() {
                // New shadow roots are not watched yet.
                return Err("a changed part holds shadow roots");
            }
        }
        // Most of the page walked again: the checks would cost more than
        // they save.
        let rewalked: usize = fresh.iter().map(|(a, b)| b - a).sum();
        if rewalked * 2 > cache.lines.len() {
            return Err("most of the page was walked again");
        }
        still_laid_out(cache, &fresh, &areas, top)?;
        // A page that hides everything usable with `aria-hidden` is walked
        // again without it: only a full observation does that.
        let any = cache
            .lines
            .iter()
            .any(|l| matches!(l, Line::Element(s) if s.in_viewport && s.index > 0));
        if !any {
            return Err("nothing usable in view");
        }
        Ok(roots.len())
    })
}

/// The index of `s`'s own kept line when `s` was listed and collected the
/// text inside it (so the walk broke before and after it): then `s` alone
/// can be walked again. Not a scroll region (whose text is context text).
fn listed_line(cache: &Cache, s: &Element) -> Option<usize> {
    let (lo, hi) = range(cache, s);
    (lo < hi).then_some(lo).filter(|&lo| {
        matches!((&cache.lines[lo], &cache.nodes[lo]),
            (Line::Element(seen), Some(el)) if el == s && seen.scroll.is_none())
    })
}

/// The segments to walk again for these changed nodes, in document order,
/// none inside another; `Err` when the whole page must be walked.
/// `listed` says whether an element the walk lists can be a segment alone.
fn segments(
    dirty: &[Node],
    document: &Document,
    opened: &js_sys::Set,
    listed: impl Fn(&Element) -> Option<usize>,
) -> Result<Vec<Element>, Fallback> {
    let mut roots: Vec<Element> = Vec::new();
    for node in dirty {
        let el = if node.node_type() == Node::ELEMENT_NODE {
            node.clone().unchecked_into::<Element>()
        } else {
            match node.parent_element() {
                Some(p) => p,
                None => continue,
            }
        };
        if !el.is_connected() {
            continue;
        }
        // Out of a shadow tree: its outermost host.
        let mut el = el;
        loop {
            let root = el.get_root_node();
            if root.node_type() != FRAGMENT_NODE {
                if root != *document.unchecked_ref::<Node>() {
                    return Err("a change in another document");
                }
                break;
            }
            el = root.unchecked_into::<web_sys::ShadowRoot>().host();
        }
        // The title is read afresh anyway; the rest of `<head>` is not walked.
        if el.closest("head").ok().flatten().is_some() {
            if el.closest("title").ok().flatten().is_some() {
                continue;
            }
            return Err("<head> changed");
        }
        let Some(s) = segment_of(&el, opened, &listed)? else { continue };
        if !roots.contains(&s) {
            roots.push(s);
        }
    }
    // Document order, and none inside another.
    roots.sort_by(|a, b| {
        let pos = a.compare_document_position(b);
        if a == b {
            std::cmp::Ordering::Equal
        } else if pos & Node::DOCUMENT_POSITION_FOLLOWING != 0 {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Greater
        }
    });
    let mut out: Vec<Element> = Vec::new();
    for r in roots {
        if out.last().is_some_and(|o| o.contains(Some(&r))) {
            continue;
        }
        out.push(r);
    }
    Ok(out)
}

/// The segment to walk again for a change of `el`: `Ok(None)` when the
/// walk never reaches `el` (it is inside something hidden), `Err` when only
/// the whole page will do. The outermost element around `el` that collects
/// text, alone when the walk listed it (`listed`); else the nearest block
/// around that.
fn segment_of(
    el: &Element,
    opened: &js_sys::Set,
    listed: &impl Fn(&Element) -> Option<usize>,
) -> Result<Option<Element>, Fallback> {
    let mut chain: Vec<Element> = Vec::new();
    let mut at = Some(el.clone());
    while let Some(e) = at {
        at = e.parent_element();
        chain.push(e);
    }
    let outermost_open = chain.iter().rposition(|e| opened.has(e));
    let start = outermost_open.unwrap_or(0);
    let parent_label = |i: usize| chain.get(i + 1).is_some_and(|p| p.local_name() == "label");
    let mut seg = outermost_open
        .filter(|&i| !parent_label(i) && !matches!(chain[i].local_name().as_str(), "body" | "html"))
        .filter(|&i| listed(&chain[i]).is_some());
    if seg.is_none() {
        for (i, e) in chain.iter().enumerate().skip(start) {
            let tag = e.local_name();
            if tag == "body" || tag == "html" {
                return Err("a change outside any block but <body>");
            }
            let block = style_cache::get(e).is_some_and(|b| b.block && !b.skip);
            if block && !parent_label(i) {
                seg = Some(i);
                break;
            }
        }
    }
    let seg = seg.ok_or("a change outside any block")?;
    // Is it reached by the walk? Every element above it is walked into.
    for (i, a) in chain.iter().enumerate().skip(seg + 1) {
        let tag = a.local_name();
        let bits = style_cache::get(a);
        if bits.is_none_or(|b| b.skip)
            || a.has_attribute("inert")
            || a.get_attribute("aria-hidden").is_some_and(|v| v.eq_ignore_ascii_case("true"))
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
                && !a.has_attribute("open")
                && chain[i - 1].local_name() != "summary")
        {
            return Ok(None);
        }
    }
    Ok(Some(chain[seg].clone()))
}

/// What the walk knows when it reaches `s`, from its parent's style.
fn ctx_of(s: &Element) -> Option<Ctx> {
    let parent = s.parent_element()?;
    let bits = style_cache::get(&parent)?;
    // A pointer given by a `:hover` rule is inherited by the walk, not by
    // CSS: any ancestor's counts (one not read last time: walk it all).
    let mut hover = false;
    let mut up = Some(parent.clone());
    while let Some(a) = up {
        if a.local_name() == "html" {
            break;
        }
        if style_cache::get(&a)?.hover {
            hover = true;
            break;
        }
        up = a.parent_element();
    }
    Some(Ctx {
        // As the walk passes it down: the parent's own cursor, or one
        // inherited from a `:hover` rule.
        pointer: bits.pointer || hover,
        hover,
        text_hidden: !bits.shown && !bits.contents,
        dirty: false,
    })
}

/// The visible part of the innermost scroll box around `s` as the walk
/// pushed it (each one cut to the ones around it), if any.
fn clip_around(s: &Element, top: &Frame) -> Option<Rect> {
    let mut boxes: Vec<Element> = Vec::new();
    let mut at = s.parent_element();
    while let Some(a) = at {
        at = a.parent_element();
        let tag = a.local_name();
        if matches!(tag.as_str(), "html" | "body") {
            continue;
        }
        if style_cache::get(&a).is_some_and(|b| b.scrolls && b.block && b.shown) {
            boxes.push(a);
        }
    }
    let mut clip: Option<Rect> = None;
    for b in boxes.iter().rev() {
        let extra = b.scroll_height() - b.client_height();
        if extra <= 8 || b.client_height() <= 0 {
            continue;
        }
        let r = b.get_bounding_client_rect();
        if r.width() <= 0.0 || r.height() <= 0.0 {
            continue;
        }
        let rect = Rect { x: r.x(), y: r.y(), width: r.width(), height: r.height() };
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
    while j < anchors.len() && !anchors[j].is_connected() {
        j += 1;
    }
    let Some(a) = anchors.get(j) else { return 1 };
    if a == s.unchecked_ref::<Node>() {
        return 0;
    }
    let pos = s.compare_document_position(a);
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
    while hi < n && !cache.anchors[hi].is_connected() {
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
) -> Result<(), Fallback> {
    let is_fresh = |i: usize| fresh.iter().any(|&(a, b)| i >= a && i < b);
    let same_place = |el: &Element, r: &Rect| {
        let now = el.get_bounding_client_rect();
        el.is_connected()
            && now.x() == r.x
            && now.y() == r.y
            && now.width() == r.width
            && now.height() == r.height
    };
    let root = cache.document.document_element().ok_or("the document has no root")?;
    if f64::from(root.scroll_width()) != cache.viewport.page_width
        || f64::from(root.scroll_height()) != cache.viewport.page_height
    {
        return Err("the page's size changed");
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
        let (Line::Element(seen), Some(el)) = (line, node) else { continue };
        if is_fresh(i) {
            continue;
        }
        if seen.in_viewport {
            // In view: where it was, and — where something changed over it —
            // still the element a click there hits.
            if !same_place(el, &seen.rect) {
                return Err("an element in view moved");
            }
            let changed_over = areas.iter().any(|a| observe::intersect(a, &seen.rect).is_some());
            let now = el.get_bounding_client_rect();
            if changed_over && !observe::uncovered(el, &now, top, &cache.clips[i]) {
                return Err("an element in view was covered");
            }
        }
        if !same_value(el, seen) {
            return Err("a field's value changed without an event");
        }
    }
    // What was covered is still covered.
    for (el, clip) in &cache.covered {
        if !el.is_connected() {
            continue;
        }
        let r = el.get_bounding_client_rect();
        let rect = Rect { x: r.x(), y: r.y(), width: r.width(), height: r.height() };
        if r.width() > 0.0
            && r.height() > 0.0
            && observe::intersect(&rect, clip).is_some()
            && observe::uncovered(el, &r, top, clip)
        {
            return Err("a covered element was uncovered");
        }
    }
    Ok(())
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
            areas.push(Rect { x: r.x(), y: r.y(), width: r.width(), height: r.height() });
        }
    };
    add(s.get_bounding_client_rect());
    if let Ok(all) = s.query_selector_all("*") {
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
                add(e.unchecked_ref::<Element>().get_bounding_client_rect());
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
