//! Seeing the page: one walk over the document that finds the interactive,
//! visible elements, numbers them, and collects their text.
//!
//! The walk goes through open shadow roots (nested) and same-origin
//! iframes, in document order; cross-origin iframes are observed by their
//! own content scripts and spliced in (`frames/`). It only reads
//! (styles, rectangles, hit tests) — the DOM is written once, afterwards,
//! when the marks are drawn — so the browser lays the page out at most
//! once.
//!
//! Here: the entry points ([`build`], the frame walk for `frames/`) and
//! the walk's shared types. The walk's parts, one concern each: `walk.rs`
//! (the visit of each node), `style.rs` (computed style, read once) and
//! `style_cache.rs` (kept between observations), `listing.rs` (which
//! elements are listed), `naming.rs` (names of unnamed controls),
//! `describe.rs` (what one element's line says), `cover.rs` (whether an
//! element shows where it would be clicked) and `iframes.rs`.

use crate::proto;
use std::rc::Rc;

use errand_protocol::{Build, ElementInfo, Observation, Rect, Viewport};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use web_sys::{
    Document, Element, HtmlIFrameElement, HtmlInputElement, HtmlTextAreaElement, Node, Window,
};

use crate::dom::{self, Name};
use crate::text::{self, Line, ScrollInfo, Seen};
use crate::{incremental, marks, registry};

mod cover;
mod describe;
mod iframes;
mod listing;
mod naming;
mod style;
pub(crate) mod style_cache;
mod walk;

pub(crate) use cover::{covering, intersect, uncovered};
pub(crate) use describe::read_select;
pub use style::StyleBits;
pub(crate) use walk::{MAX_EMPTY, Walk};
#[allow(unused_imports)]
use {cover::*, describe::*, iframes::*, listing::*, naming::*, style::*, walk::*};

/// The first line of an observation taken while the page kept changing.
pub const STILL_CHANGING: &str =
    "(The page was still changing after 3 s: this is how it looked then.)\n";

/// The first line of an observation of a page nested deeper than a walk
/// goes (`walk::MAX_DEPTH`).
pub const TOO_DEEP: &str =
    "(Part of the page is nested more than 512 elements deep: what is inside it is not listed.)\n";

/// Text collected per element before it is cut (in bytes of raw text).
const TEXT_COLLECT_MAX: usize = 400;
/// Context text collected per block before it is cut (in bytes).
const CONTEXT_COLLECT_MAX: usize = 1200;

thread_local! {

    /// The numbers listed by the previous observation, to mark new ones.
    static PREVIOUS: std::cell::RefCell<Option<Numbers>> =
        const { std::cell::RefCell::new(None) };
}

/// A set of element numbers, one bit each: the registry's numbers are
/// dense from 1, and this is read and rebuilt on every observation. (32-bit
/// words: the JS build has no 64-bit integers, it emulates them.)
#[derive(Default)]
struct Numbers(Vec<u32>);

impl Numbers {
    fn insert(&mut self, n: u32) {
        let (word, bit) = ((n / 32) as usize, n % 32);
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << bit;
    }

    fn contains(&self, n: u32) -> bool {
        self.0.get((n / 32) as usize).is_some_and(|w| w & (1 << (n % 32)) != 0)
    }
}

/// Which build is running.
pub fn build() -> Build {
    if cfg!(errand_js) { Build::Js } else { Build::Wasm }
}

/// Observes the page; draws the marks when asked, removes old ones otherwise.
/// Starts from the previous observation when only a few parts of the page
/// changed since (see `incremental/`), unless `full`. Sent as a diff
/// against the observation numbered `since` when that was the last one
/// sent (`sent.rs`).
pub async fn observe(
    marks_wanted: bool,
    full: bool,
    since: Option<u64>,
) -> Result<Observation, String> {
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    crate::mark("observe");
    let asked = window.performance().map_or(0.0, |p| p.now());
    // Ready before seen: once the page has settled (`ready.rs`).
    let settling = crate::ready::Settling::start(&document);
    if !full && settling.will_wait(&document) && !incremental::kept_for(&document) {
        // A fresh document sits out a quiet window before it is seen:
        // walked meanwhile, the observation once it is still re-reads only
        // what changed since (`incremental/`), or walks again.
        prewalk(&window, &document);
        crate::mark("prewalked");
    }
    let mut settled = settling.wait(&document).await;
    crate::mark("settled");
    let perf = window.performance();
    let started = perf.as_ref().map_or(0.0, |p| p.now());
    let mut walked = walk_phase(&window, &document, full, crate::deadline::WALK_MS)?;
    if crate::ready::images_coming() {
        // Usable elements still empty because their pictures are coming
        // (`ready::image_coming`): waited for within the settle wait's
        // bound, then read again (a re-observation finds them no longer
        // empty and walks the page).
        let left = crate::ready::MAX_MS - (perf.as_ref().map_or(0.0, |p| p.now()) - asked);
        settled &= crate::ready::images_come(left.min(crate::ready::IMAGE_WAIT_MS)).await;
        walked = walk_phase(&window, &document, full, crate::deadline::WALK_MS)?;
        crate::ready::forget_images();
    }
    let Walked { viewport, reobserved, fallback, remote, url } = walked;
    // ---- frames.rs: cross-origin frames, observed by their own content
    // scripts, their lines spliced in where their iframes are ----
    if !remote.is_empty() {
        let answers = crate::frames::ask(&remote, marks_wanted, 0).await;
        incremental::put_frames(remote, answers);
    }
    let title = proto::title(&document);
    let (elements, mut text) = incremental::with_lines(|lines, nodes, rendered| {
        finish(lines, nodes, rendered, &document, &viewport, marks_wanted)
    })?;
    if walk::was_cut() {
        text.insert_str(0, TOO_DEEP);
    }
    if !settled {
        text.insert_str(0, STILL_CHANGING);
    }
    if marks_wanted {
        crate::frames::draw_marks().await; // frames.rs: each frame draws its own
    }
    let mut obs = Observation {
        url,
        title,
        build: Some(build()),
        viewport,
        reobserved: reobserved.map(|n| n as u32),
        fallback: fallback.map(str::to_owned),
        ..Observation::default()
    };
    crate::mark("finished");
    crate::sent::package(&mut obs, elements, text, since);
    obs.elapsed_ms = perf.as_ref().map_or(0.0, |p| p.now()) - started;
    Ok(obs)
}

/// What the walk part of an observation leaves for the rest.
struct Walked {
    viewport: Viewport,
    reobserved: Option<usize>,
    fallback: Option<incremental::Fallback>,
    /// The cross-origin frames to ask.
    remote: Vec<crate::frames::Pending>,
    url: String,
}

/// Walks the page, or re-reads what changed since the kept walk (unless
/// `full`), and keeps the result (`incremental/`); a walk longer than
/// `limit_ms` gives up (`deadline.rs`).
fn walk_phase(
    window: &Window,
    document: &Document,
    full: bool,
    limit_ms: f64,
) -> Result<Walked, String> {
    // What the last walk kept is not the whole page when it left out what
    // nests too deep: walked again, whole (and the observation says so).
    let full = walk::take_cut() || full;
    let vw = num(window.inner_width());
    let vh = num(window.inner_height());
    let location = document.location();
    let url = location.as_ref().and_then(|l| l.href().ok()).unwrap_or_default();
    let origin = location.as_ref().and_then(|l| l.origin().ok()).unwrap_or_default();
    let root = proto::document_element(&document).ok_or("the document has no root element")?;

    let top = Frame {
        window: window.clone(),
        dx: 0.0,
        dy: 0.0,
        clip: Rect { x: 0.0, y: 0.0, width: vw, height: vh },
        width: vw,
        height: vh,
        cached: true,
    };
    style_cache::begin(&document, vw, vh);
    crate::ready::forget_images();
    // The previous observation's overlay goes before the walk: each of its
    // boxes is a layer that every hit test would pass through (with
    // hundreds of marks drawn, most of a walk's time). `finish` draws the
    // new one.
    own_writes(marks::clear);
    let viewport = Viewport {
        width: vw,
        height: vh,
        scroll_x: window.scroll_x().unwrap_or(0.0),
        scroll_y: window.scroll_y().unwrap_or(0.0),
        page_width: f64::from(proto::scroll_width(&root)),
        page_height: f64::from(proto::scroll_height(&root)),
    };
    // Elements given click, pointer or key listeners since the last ask
    // (`listeners.rs`): changes too.
    crate::listeners::refresh(&document);
    incremental::listeners_found(crate::listeners::take_fresh());
    let changes = incremental::take_changes(&document);
    crate::deadline::begin(limit_ms);
    let (reobserved, fallback) = match full {
        true => (None, None),
        false => match incremental::reobserve(changes, &document, &top, &viewport, &origin) {
            Ok(n) => (Some(n), None),
            Err(why) => (None, Some(why)),
        },
    };
    // Cross-origin frames: what they show changes unseen by this
    // document's observers, so each is asked again every time (its lines
    // from a re-observation's kept ones taken out first).
    let remote = match reobserved {
        Some(_) => incremental::take_frames(),
        None => {
            registry::forget_gone();
            let mut walk = walk_document(&root, &top, &origin);
            let remote = std::mem::take(&mut walk.remote);
            incremental::store(walk, &document, &viewport);
            remote
        }
    };
    // The walk's reads are done; what the page changes from here on (while
    // the frames answer, say) is recorded for the next observation.
    style_cache::end();
    incremental::end();
    if let Err(why) = crate::deadline::end() {
        // What the walk kept is partial: the next observation starts over.
        incremental::forget();
        return Err(why);
    }
    Ok(Walked { viewport, reobserved, fallback, remote, url })
}

/// The walk of a fresh document while its first observation waits for
/// it to be still (`ready::will_wait`), kept for that observation. A page
/// with cross-origin frames is not kept (their lines come from asking
/// them, which the observation does). Its lines are written too: the
/// observation writes again only those that changed meanwhile (the walk
/// often ends before the quiet window does).
fn prewalk(window: &Window, document: &Document) {
    match walk_phase(window, document, true, crate::deadline::WALK_MS) {
        Ok(w) if w.remote.is_empty() => {
            let _ = incremental::with_lines(|lines, _, rendered| {
                render(lines, rendered, &w.viewport, None);
                Ok(())
            });
        }
        _ => incremental::forget(),
    }
}

/// For a page a task drives (`crate::prepare`), told while it loads or
/// once it has loaded: its readiness watch begins now, and its first walk
/// comes once it has loaded and is idle, kept, unless an observation
/// walked it first. While it loads, the page is walked once when it is
/// idle (waiting for its pictures, say), for at most [`WARM_UP_MS`], and
/// that walk thrown away with the styles it read: a walk of a page still loading would be re-read from
/// mutations, which do not say what its pictures and style sheets still
/// move, but it runs the walk's code once, so that the kept walk at `load`
/// and the observation run warm code (a walk's first run in a fresh
/// instance costs several times the next: V8's first tiers, the wrappers
/// of the calls to the page).
pub fn prepare() {
    let Some(window) = web_sys::window() else { return };
    let Some(document) = window.document() else { return };
    crate::ready::watch(&document);
    if incremental::kept_for(&document) {
        return;
    }
    if document.ready_state() == "complete" {
        walk_when_idle(window, document, false);
        return;
    }
    walk_when_idle(window.clone(), document.clone(), true);
    let target = window.clone();
    let on_load = Closure::once_into_js(move || walk_when_idle(window, document, false));
    let options = web_sys::AddEventListenerOptions::new();
    options.set_once(true);
    let _ = target.add_event_listener_with_callback_and_add_event_listener_options(
        "load",
        on_load.unchecked_ref(),
        &options,
    );
}

/// [`prepare`]'s walk, when the page is idle (at most [`PREPARE_IDLE_MS`]
/// from now): kept, or, with `warm_up` and the page still loading, thrown
/// away.
fn walk_when_idle(window: Window, document: Document, warm_up: bool) {
    let global = js_sys::global();
    let walk = Closure::once_into_js(move || {
        // Still this document, and still not walked.
        let current = window.document().is_some_and(|d| d == document);
        if !current || incremental::kept_for(&document) {
            return;
        }
        if !warm_up {
            prewalk(&window, &document);
            crate::mark("prepared");
        } else if document.ready_state() != "complete" {
            let _ = walk_phase(&window, &document, true, WARM_UP_MS);
            incremental::forget();
            style_cache::clear();
            crate::mark("warmed");
        }
    });
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"timeout".into(), &PREPARE_IDLE_MS.into());
    if let Ok(idle) = js_sys::Reflect::get(&global, &"requestIdleCallback".into()) {
        if let Some(idle) = idle.dyn_ref::<js_sys::Function>() {
            let _ = idle.call2(&global, &walk, &options);
        }
    }
}

/// How long the walk of a page still loading may run ([`prepare`]): long
/// enough for the walk's code to have run (V8 compiles a function when it
/// is first called, and a call to the page gets its own wrapper after its
/// first thousand calls), short enough not to hold the page's `load` back
/// long when a picture comes meanwhile. (The walk's clock is read every 256
/// elements.)
const WARM_UP_MS: f64 = 30.0;

/// The longest wait for the page to be idle before [`prepare`]'s walk.
const PREPARE_IDLE_MS: u32 = 1000;

/// A kept line as written for the model and as recorded for the protocol,
/// reused while the line is unchanged (see `incremental/`).
pub struct Rendered {
    /// Whether it was written with the new-element mark.
    is_new: bool,
    written: Option<text::Written>,
    info: Option<Rc<ElementInfo>>,
}

/// Marks what is new, writes the text and the element records, and draws
/// (or removes) the marks: the part of an observation after the walk.
fn finish(
    lines: &mut [Line],
    nodes: &[Option<Element>],
    rendered: &mut Vec<Option<Rendered>>,
    document: &Document,
    viewport: &Viewport,
    marks_wanted: bool,
) -> Result<(Vec<Rc<ElementInfo>>, String), String> {
    let mut listed = Numbers::default();
    render(lines, rendered, viewport, Some(&mut listed));
    PREVIOUS.with(|p| *p.borrow_mut() = Some(listed));
    let mut written: Vec<&text::Written> = Vec::with_capacity(rendered.len());
    let mut elements: Vec<Rc<ElementInfo>> = Vec::new();
    let mut marked: Vec<(u32, Element)> = Vec::new();
    let mut boxes: Vec<Rect> = Vec::new();
    for ((r, l), node) in rendered.iter().zip(lines.iter()).zip(nodes.iter()) {
        let Some(r) = r else { continue };
        written.extend(r.written.as_ref());
        elements.extend(r.info.clone());
        if let (true, Line::Element(seen), Some(el)) = (marks_wanted, l, node) {
            if seen.index > 0 && seen.in_viewport {
                marked.push((seen.index, el.clone()));
                // Where the walk (or the check that it has not moved since)
                // read it, in the top viewport.
                boxes.push(seen.rect);
            }
        }
    }
    let text = text::render_written(&written, viewport, text::TEXT_CAP);

    // The new overlay, after every layout read; Errand's own writes are not
    // the page's changes.
    if marks_wanted {
        own_writes(|| marks::draw(document, &marked, Some(&boxes)))
            .map_err(|e| format!("cannot draw the marks: {}", crate::act::js_text(&e)))?;
    }
    Ok((elements, text))
}

/// Marks what the previous observation did not list, and writes again the
/// lines re-walked (or all of them after a full walk) and those whose
/// new-element mark changed: one pass over the lines, which on a large
/// page costs more than the re-walk of one change. Notes the numbers
/// listed in `listed`.
fn render(
    lines: &mut [Line],
    rendered: &mut Vec<Option<Rendered>>,
    viewport: &Viewport,
    mut listed: Option<&mut Numbers>,
) {
    if rendered.len() != lines.len() {
        rendered.clear();
        rendered.resize_with(lines.len(), || None);
    }
    PREVIOUS.with(|p| {
        let p = p.borrow();
        for (line, r) in lines.iter_mut().zip(rendered.iter_mut()) {
            if let Line::Element(seen) = line {
                if let Some(listed) = listed.as_deref_mut() {
                    listed.insert(seen.index);
                }
                if let Some(prev) = p.as_ref() {
                    seen.is_new = seen.index > 0 && !prev.contains(seen.index);
                }
            }
            let is_new = matches!(line, Line::Element(seen) if seen.is_new);
            if r.as_ref().is_none_or(|r| r.is_new != is_new) {
                *r = Some(render_line(line, is_new, viewport));
            }
        }
    });
}

/// One line written. A function of its own, called once per line: V8
/// compiles a WebAssembly function again, optimized, only for its later
/// calls, so a loop's body inlined into a function called once (the
/// observation's) would run unoptimized on every line of a first
/// observation.
#[inline(never)]
fn render_line(line: &Line, is_new: bool, viewport: &Viewport) -> Rendered {
    Rendered {
        is_new,
        written: text::write_line(line, viewport),
        info: match line {
            Line::Element(seen) if seen.index > 0 => Some(Rc::new(text::info(seen))),
            _ => None,
        },
    }
}

/// One walk over a document from its root element.
fn walk_document(root: &Element, top: &Frame, origin: &str) -> Walk {
    let mut walk = Walk::new(origin.to_owned(), false);
    walk.visit(root, top, Ctx::default());
    walk.flush();
    // A page that hides its whole background with `aria-hidden` (behind a
    // dialog that a snapshot lost, say) still shows it to a person: when
    // honouring `aria-hidden` leaves nothing usable in view, walk again
    // without it; covered elements are still left out by the hit tests.
    if walk.aria_hidden_skipped > 0 && !walk.any_in_view() {
        walk = Walk::new(origin.to_owned(), true);
        walk.visit(root, top, Ctx::default());
        walk.flush();
    }
    walk
}

/// Runs Errand's own DOM writes (the overlay) so that the change observers
/// (the style cache's and the incremental observation's) do not take them
/// for the page's.
pub(crate) fn own_writes<T>(write: impl FnOnce() -> T) -> T {
    style_cache::own_writes(|| incremental::own_writes(|| crate::ready::own_writes(write)))
}

/// A frame's walk: its lines, their elements, its cross-origin frames.
pub(crate) type FrameWalk = (Vec<Line>, Vec<Option<Element>>, Vec<crate::frames::Pending>);

/// The lines (with their elements) and cross-origin frames of this
/// document, observed as a frame of another page (`frames/`): positions
/// in the top viewport through `view`. Links are shown whole (the model
/// reads them against the top page's address).
pub(crate) fn walk_frame(view: &crate::frames::View) -> Result<FrameWalk, String> {
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    registry::forget_gone();
    let vw = num(window.inner_width());
    let vh = num(window.inner_height());
    let root = proto::document_element(&document).ok_or("the document has no root element")?;
    let top = Frame {
        window,
        dx: view.dx,
        dy: view.dy,
        clip: view.clip,
        width: vw,
        height: vh,
        cached: true,
    };
    style_cache::begin(&document, vw, vh);
    crate::ready::forget_images();
    crate::deadline::begin(crate::deadline::WALK_MS);
    crate::listeners::refresh(&document);
    let walk = walk_document(&root, &top, "");
    style_cache::end();
    crate::deadline::end()?;
    Ok((walk.lines, walk.nodes, walk.remote))
}

/// A JS number, or 0.
fn num(v: Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue>) -> f64 {
    v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0)
}

/// A document being walked: the top one or a same-origin iframe's.
pub(crate) struct Frame {
    pub(crate) window: Window,
    /// Where this document's viewport sits in the top viewport.
    pub(crate) dx: f64,
    pub(crate) dy: f64,
    /// The part of the top viewport through which this document is seen.
    pub(crate) clip: Rect,
    /// This document's own viewport size.
    pub(crate) width: f64,
    pub(crate) height: f64,
    /// Whether style reads here may be cached: only the top document's
    /// light tree is watched by the mutation observer.
    cached: bool,
}

/// A same-origin iframe walked into, as `incremental/` checks it later.
pub(crate) struct FrameSeen {
    pub(crate) iframe: Element,
    /// The document it showed.
    pub(crate) document: Document,
    /// Its box in the top viewport.
    pub(crate) rect: Rect,
    /// Its window's size and scroll position.
    pub(crate) size: (f64, f64),
    pub(crate) scroll: (f64, f64),
    /// Its root element was walked as a block: its lines start and end
    /// with a clean break, so it can be walked again alone.
    pub(crate) breaks: bool,
}

/// An element left out because something covers it in view.
pub(crate) struct Covered {
    pub(crate) el: Element,
    /// The part of the viewport it was seen through.
    pub(crate) clip: Rect,
    /// Its box in its own document's viewport.
    pub(crate) rect: Rect,
    /// What the hit tests landed on instead, with their boxes then (empty
    /// when not known): while none of them changed or moved, nor the
    /// element, it is still covered without asking again.
    pub(crate) by: Vec<(Element, Rect)>,
}

/// What a node inherits from its parent during the walk.
#[derive(Clone, Copy, Default)]
pub(crate) struct Ctx {
    /// The parent has `cursor: pointer` (or `move`, `grab`).
    pub(crate) pointer: bool,
    /// The parent has it only under the mouse (`hover.rs`): so does this
    /// element, as the cursor is inherited.
    pub(crate) hover: bool,
    /// The parent's text is hidden (`visibility: hidden`).
    pub(crate) text_hidden: bool,
    /// The parent's style was read afresh (it or an ancestor changed):
    /// so is this element's.
    pub(crate) dirty: bool,
    /// The parent has `cursor: move` or `grab` (a drag handle's inside).
    pub(crate) grab: bool,
    /// The parent is a flex row (`display: flex`, `flex-direction: row`,
    /// `flex-wrap: nowrap`): its items read as one line.
    pub(crate) row: bool,
}

#[cfg(test)]
mod tests {
    use super::Numbers;

    #[test]
    fn the_depth_note_says_the_walks_depth() {
        assert!(super::TOO_DEEP.contains(&format!(" {} ", super::walk::MAX_DEPTH)));
    }

    #[test]
    fn numbers_hold_what_was_put_in() {
        let mut n = Numbers::default();
        let put = [1, 31, 32, 33, 63, 64, 1000, 4095];
        for &i in &put {
            n.insert(i);
        }
        for i in 0..5000 {
            assert_eq!(n.contains(i), put.contains(&i), "{i}");
        }
    }
}
