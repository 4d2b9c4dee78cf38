//! Seeing the page: one walk over the document that finds the interactive,
//! visible elements, numbers them, and collects their text.
//!
//! The walk goes through open shadow roots (nested) and same-origin
//! iframes, in document order; cross-origin iframes are observed by their
//! own content scripts and spliced in (`frames.rs`). It only reads
//! (styles, rectangles, hit tests) — the DOM is written once, afterwards,
//! when the marks are drawn — so the browser lays the page out at most
//! once.

use crate::proto;
use std::rc::Rc;

use errand_protocol::{Build, ElementInfo, Observation, Rect, Viewport};
use wasm_bindgen::JsCast;
use web_sys::{
    Document, Element, HtmlIFrameElement, HtmlInputElement, HtmlTextAreaElement, Node, Window,
};

use crate::dom::{self, Name};
use crate::text::{self, Line, ScrollInfo, Seen};
use crate::{incremental, marks, registry};

/// The first line of an observation taken while the page kept changing.
pub const STILL_CHANGING: &str =
    "(The page was still changing after 3 s: this is how it looked then.)\n";

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

/// ARIA roles that make an element interactive.
const INTERACTIVE_ROLES: &[&str] = &[
    "button",
    "link",
    "checkbox",
    "radio",
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "combobox",
    "switch",
    "slider",
    "textbox",
    "listbox",
    "searchbox",
    "spinbutton",
    "treeitem",
];

/// Which build is running.
pub fn build() -> Build {
    if cfg!(errand_js) { Build::Js } else { Build::Wasm }
}

/// Observes the page; draws the marks when asked, removes old ones otherwise.
/// Starts from the previous observation when only a few parts of the page
/// changed since (see `incremental.rs`), unless `full`. Sent as a diff
/// against the observation numbered `since` when that was the last one
/// sent (`sent.rs`).
pub async fn observe(
    marks_wanted: bool,
    full: bool,
    since: Option<u64>,
) -> Result<Observation, String> {
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    // Ready before seen: once the page has settled (`ready.rs`).
    let settled = crate::ready::settle(&document).await;
    let perf = window.performance();
    let started = perf.as_ref().map_or(0.0, |p| p.now());

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
    crate::deadline::begin(crate::deadline::WALK_MS);
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
    crate::sent::package(&mut obs, elements, text, since);
    obs.elapsed_ms = perf.as_ref().map_or(0.0, |p| p.now()) - started;
    Ok(obs)
}

/// A kept line as written for the model and as recorded for the protocol,
/// reused while the line is unchanged (see `incremental.rs`).
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
    // Mark what the previous observation did not list, and write again the
    // lines re-walked (or all of them after a full walk) and those whose
    // new-element mark changed: one pass over the lines, which on a large
    // page costs more than the re-walk of one change.
    if rendered.len() != lines.len() {
        rendered.clear();
        rendered.resize_with(lines.len(), || None);
    }
    let mut listed = Numbers::default();
    PREVIOUS.with(|p| {
        let mut p = p.borrow_mut();
        for (line, r) in lines.iter_mut().zip(rendered.iter_mut()) {
            if let Line::Element(seen) = line {
                listed.insert(seen.index);
                if let Some(prev) = p.as_ref() {
                    seen.is_new = seen.index > 0 && !prev.contains(seen.index);
                }
            }
            let is_new = matches!(line, Line::Element(seen) if seen.is_new);
            if r.as_ref().is_none_or(|r| r.is_new != is_new) {
                *r = Some(Rendered {
                    is_new,
                    written: text::write_line(line, viewport),
                    info: match line {
                        Line::Element(seen) if seen.index > 0 => Some(Rc::new(text::info(seen))),
                        _ => None,
                    },
                });
            }
        }
        *p = Some(listed);
    });
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
            .map_err(|e| format!("cannot draw the marks: {e:?}"))?;
    }
    Ok((elements, text))
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
/// document, observed as a frame of another page (`frames.rs`): positions
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

/// A same-origin iframe walked into, as `incremental.rs` checks it later.
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

/// What covered an element, each with its box now.
fn with_boxes(by: Vec<Element>) -> Vec<(Element, Rect)> {
    by.into_iter()
        .map(|b| {
            let r = rect_of(&proto::get_bounding_client_rect(&b));
            (b, r)
        })
        .collect()
}

/// A box as a [`Rect`].
pub(crate) fn rect_of(r: &web_sys::DomRect) -> Rect {
    Rect { x: r.x(), y: r.y(), width: r.width(), height: r.height() }
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

/// What the walk needs of an element's computed style.
#[derive(Clone, Copy, Default)]
pub struct StyleBits {
    /// `display: none` or `opacity: 0`: nothing of it shows.
    pub skip: bool,
    /// Its own box shows (not `visibility: hidden`, not `display: contents`).
    pub shown: bool,
    /// A block-level box (context text is cut at its edges).
    pub block: bool,
    pub pointer: bool,
    pub contents: bool,
    /// `overflow-y` lets it scroll.
    pub scrolls: bool,
    /// Not a plain inline box (`inline-block`, `block`, `flex`…).
    pub boxed: bool,
    /// Drawn as an image by CSS (`content: url(…)`, or an unshifted
    /// `background-image`, not a sprite): an icon, named by its file.
    pub image: bool,
    /// Its `:hover` rule gives the pointer cursor (`hover.rs`).
    pub hover: bool,
    /// A flex row: its children are laid out side by side.
    pub row: bool,
    /// `cursor: move` or `grab`: what a drag starts from.
    pub grab: bool,
}

fn read_style(el: &Element, frame: &Frame, hover: Option<&str>) -> StyleBits {
    let Ok(Some(style)) = frame.window.get_computed_style(el) else {
        return StyleBits { skip: true, ..StyleBits::default() };
    };
    let prop = |name: Name| dom::property(&style, name);
    let display = prop(Name::Display);
    // A transparent file input laid over a "Choose a file" area is the
    // control a person clicks: it stays listed (issue 19). So does a
    // combobox's input made transparent while the box shows its chosen
    // value (react-select after a choice): the box is what a person uses.
    let transparent = prop(Name::Opacity).parse::<f64>().is_ok_and(|o| o <= 0.0);
    // So is a transparent `<select>` laid over a date picker's month or
    // year caption (Pikaday's): a person clicks the caption and gets it.
    // (One under the widget that replaced it is left out as covered.)
    if display == "none"
        || (transparent
            && !is_file_input(el)
            && !is_combobox_input(el)
            && proto::local_name(el) != "select")
    {
        return StyleBits { skip: true, ..StyleBits::default() };
    }
    let visibility = prop(Name::Visibility);
    let contents = display == "contents";
    let block = !display.starts_with("inline") && !contents;
    // `move` and `grab`: items of drag-and-drop lists (sortables,
    // boards), which `drag_and_drop` needs the numbers of.
    let cursor = prop(Name::Cursor);
    let grab = matches!(cursor.as_str(), "move" | "grab");
    let pointer = grab || cursor == "pointer";
    let row = matches!(display.as_str(), "flex" | "inline-flex")
        && prop(Name::FlexDirection).starts_with("row")
        && prop(Name::FlexWrap) == "nowrap";
    StyleBits {
        skip: false,
        shown: visibility != "hidden" && visibility != "collapse" && !contents,
        block,
        pointer,
        contents,
        scrolls: block && matches!(prop(Name::OverflowY).as_str(), "auto" | "scroll" | "overlay"),
        boxed: display != "inline",
        image: prop(Name::Content).starts_with("url(")
            || (prop(Name::BackgroundImage).starts_with("url(")
                && matches!(prop(Name::BackgroundPosition).as_str(), "0% 0%" | "0px 0px")),
        // Asked only when the cursor does not say it already (one
        // `matches` per element on pages with such rules).
        hover: !pointer && hover.is_some_and(|s| proto::matches(el, s).unwrap_or(false)),
        row,
        grab,
    }
}

/// Whether the `li`'s list has listeners of its own (a sortable list, a
/// menu delegating to its items).
fn list_listens(li: &Element) -> bool {
    proto::parent_element(li).is_some_and(|ul| {
        matches!(proto::local_name(&ul).as_str(), "ul" | "ol") && crate::listeners::has(&ul)
    })
}

/// Whether the element's text is drawn in an icon font (Material Icons,
/// Material Symbols): ligatures whose words are pictures.
fn icon_font(el: &Element, frame: &Frame) -> bool {
    let Ok(Some(style)) = frame.window.get_computed_style(el) else {
        return false;
    };
    let family = dom::property(&style, Name::FontFamily).to_ascii_lowercase();
    family.contains("material icons") || family.contains("material symbols")
}

fn is_file_input(el: &Element) -> bool {
    proto::local_name(&el) == "input"
        && proto::get_attribute(&el, "type").is_some_and(|t| t.eq_ignore_ascii_case("file"))
}

/// Whether `el`'s box is at most 48 px each way (an icon, a handle).
fn small_box(el: &Element) -> bool {
    let r = proto::get_bounding_client_rect(el);
    r.width() > 0.0 && r.width() <= 48.0 && r.height() <= 48.0
}

/// An `<input role=combobox>`.
fn is_combobox_input(el: &Element) -> bool {
    proto::local_name(&el) == "input"
        && proto::get_attribute(&el, "role").is_some_and(|r| r.eq_ignore_ascii_case("combobox"))
}

/// An icon's name: the file name of its image, without the extension
/// (`url("…/images/folder-closed.gif")` → `folder-closed`).
fn icon_name(el: &Element, frame: &Frame) -> Option<String> {
    let style = frame.window.get_computed_style(el).ok()??;
    let prop = |name: Name| dom::property(&style, name);
    let mut value = prop(Name::Content);
    if !value.starts_with("url(") {
        value = prop(Name::BackgroundImage);
    }
    let url = value.strip_prefix("url(")?.trim_end_matches(')').trim_matches(['"', '\'']);
    if url.starts_with("data:") {
        return None;
    }
    let path = url.split(['?', '#']).next()?;
    let file = path.rsplit('/').next()?;
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    (!stem.is_empty() && stem.len() <= 40).then(|| stem.to_owned())
}

/// The state of one walk.
pub(crate) struct Walk {
    pub(crate) lines: Vec<Line>,
    /// The element of each line (`None` for text and headings).
    pub(crate) nodes: Vec<Option<Element>>,
    /// Per line, the node of the top document's light tree it comes from
    /// (the outermost shadow host for what a shadow tree shows): lines are
    /// in the document order of their anchors, which is how
    /// `incremental.rs` finds the lines of a subtree.
    pub(crate) anchors: Vec<Node>,
    /// Per line, the part of the viewport it was seen through (for the
    /// hit tests an incremental observation repeats).
    pub(crate) line_clips: Vec<Rect>,
    /// Elements left out because something covers them, with their clip.
    pub(crate) covered: Vec<Covered>,
    /// The elements whose line collects the text inside them (listed
    /// elements that are not scroll regions, headings).
    pub(crate) opened: js_sys::Set,
    /// A same-origin iframe was walked that `incremental.rs` does not
    /// watch (one in a shadow tree or in another frame).
    pub(crate) saw_frame: bool,
    /// The same-origin iframes of the top document's light tree walked
    /// into (`incremental.rs` watches their documents).
    pub(crate) frames: Vec<FrameSeen>,
    /// Inside such a frame: the anchor of its lines.
    in_frame: Option<Element>,
    /// The open shadow roots walked.
    pub(crate) shadows: Vec<web_sys::ShadowRoot>,
    /// The outermost shadow host being walked inside, if any.
    host: Option<Element>,
    /// The anchor of the pending context text.
    pending_anchor: Option<Node>,
    /// Lines (by position) collecting text: the innermost one gets it.
    open: Vec<usize>,
    /// How many of the open lines are elements (not headings).
    open_elements: usize,
    /// The open lines (by position) listed only for their listeners.
    listener_only: Vec<usize>,
    origin: String,
    /// Walk into `aria-hidden` subtrees anyway (the second walk).
    pub(crate) ignore_aria_hidden: bool,
    /// How many `aria-hidden` subtrees were left out.
    pub(crate) aria_hidden_skipped: usize,
    /// In the walk without `aria-hidden`: how many `aria-hidden` subtrees
    /// the walk is in.
    pub(crate) hidden_depth: usize,
    /// Per line: whether it is inside an `aria-hidden` subtree (read by
    /// `incremental.rs` to tell what the first walk would have found).
    pub(crate) line_hidden: Vec<bool>,
    /// The last text added ran to its end with no space after it, and no
    /// box came since: the next text joins it without a space.
    glue: bool,
    /// Context text not inside any listed element, waiting for its block
    /// to end.
    pending: String,
    /// Whether the block the pending text is in shows in the viewport.
    pending_in_view: bool,
    /// The block-level elements being walked, innermost last, with the
    /// frame's offset and clip, to place pending text, and whether it
    /// shows in the viewport once asked (a block's text often comes in
    /// several runs between listed elements: its box is read once).
    blocks: Vec<(Element, Rect, f64, f64, Option<bool>)>,
    /// The visible part of the scrolling boxes being walked, innermost
    /// last, in top-window pixels: what they clip is not in view.
    pub(crate) clips: Vec<Rect>,
    /// The top window's scroll position.
    scroll: (f64, f64),
    /// Elements whose `:hover` rule gives the pointer cursor (`hover.rs`).
    hover: Option<String>,
    /// Cross-origin frames met (`frames.rs` observes them).
    pub(crate) remote: Vec<crate::frames::Pending>,
    /// The fields' labels, found once per document or shadow root.
    labels: std::cell::RefCell<crate::labels::Labels>,
}

impl Walk {
    pub(crate) fn new(origin: String, ignore_aria_hidden: bool) -> Walk {
        Walk {
            lines: Vec::new(),
            nodes: Vec::new(),
            anchors: Vec::new(),
            line_clips: Vec::new(),
            covered: Vec::new(),
            opened: js_sys::Set::new(&wasm_bindgen::JsValue::UNDEFINED),
            saw_frame: false,
            frames: Vec::new(),
            in_frame: None,
            shadows: Vec::new(),
            host: None,
            pending_anchor: None,
            open: Vec::new(),
            open_elements: 0,
            listener_only: Vec::new(),
            origin,
            ignore_aria_hidden,
            aria_hidden_skipped: 0,
            hidden_depth: 0,
            line_hidden: Vec::new(),
            pending: String::new(),
            pending_in_view: false,
            glue: false,
            blocks: Vec::new(),
            clips: Vec::new(),
            scroll: web_sys::window()
                .map(|w| (w.scroll_x().unwrap_or(0.0), w.scroll_y().unwrap_or(0.0)))
                .unwrap_or_default(),
            hover: web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| crate::hover::pointer_selector(&d)),
            remote: Vec::new(),
            labels: Default::default(),
        }
    }

    /// Whether an element is pushed out of the top page (a skip link at
    /// -9999px), where no scrolling brings it into view.
    fn unreachable(&self, r: &web_sys::DomRect, frame: &Frame) -> bool {
        let (x, y) = (r.x() + frame.dx, r.y() + frame.dy);
        x + r.width() + self.scroll.0 <= 0.0 || y + r.height() + self.scroll.1 <= 0.0
    }

    /// The part of the top viewport through which the current node shows.
    fn clip(&self, frame: &Frame) -> Rect {
        match self.clips.last() {
            Some(c) => intersect(c, &frame.clip).unwrap_or(Rect { width: 0.0, height: 0.0, ..*c }),
            None => frame.clip,
        }
    }

    /// Whether any usable element was found in the viewport.
    pub(crate) fn any_in_view(&self) -> bool {
        self.lines.iter().any(|l| matches!(l, Line::Element(s) if s.in_viewport && s.index > 0))
    }

    /// The anchor of a line that comes from `node` (see [`Walk::anchors`]).
    fn anchor(&self, node: &Node) -> Node {
        match (&self.in_frame, &self.host) {
            (Some(f), _) => f.clone().unchecked_into(),
            (None, Some(h)) => h.clone().unchecked_into(),
            (None, None) => node.clone(),
        }
    }

    fn push_line(&mut self, line: Line, node: Option<Element>, anchor: Node, clip: Rect) {
        self.lines.push(line);
        self.nodes.push(node);
        self.anchors.push(anchor);
        self.line_clips.push(clip);
        self.line_hidden.push(self.hidden_depth > 0);
    }

    /// Ends the pending context text as a line of its own.
    pub(crate) fn flush(&mut self) {
        if self.pending.trim().is_empty() {
            self.pending.clear();
            return;
        }
        let text = std::mem::take(&mut self.pending);
        let in_viewport = self.pending_in_view;
        let Some(anchor) = self.pending_anchor.take() else {
            return;
        };
        let clip = Rect::default();
        self.push_line(Line::Text { text, in_viewport }, None, anchor, clip);
    }

    /// Walks the children of an element or shadow root.
    fn children(&mut self, parent: &Node, frame: &Frame, ctx: Ctx) {
        let mut child = proto::first_child(&parent);
        while let Some(node) = child {
            match proto::node_type(&node) {
                Node::ELEMENT_NODE => self.visit(node.unchecked_ref::<Element>(), frame, ctx),
                Node::TEXT_NODE if !ctx.text_hidden => {
                    if let Some(t) = proto::node_value(&node) {
                        self.add_text(&t, &node);
                    }
                }
                _ => {}
            }
            child = proto::next_sibling(&node);
        }
    }

    /// Gives text to the innermost collecting line, or to the pending
    /// context text when no line collects.
    fn add_text(&mut self, t: &str, from: &Node) {
        if t.trim().is_empty() {
            self.glue = false;
            return;
        }
        // Text right against the text before it (no whitespace, only
        // plain inline boxes between) is one word on the screen.
        let glued = self.glue && !t.starts_with(char::is_whitespace);
        self.glue = !t.ends_with(char::is_whitespace);
        let sep = if glued { "" } else { " " };
        let Some(&i) = self.open.last() else {
            if self.pending.is_empty() {
                self.pending_anchor = Some(self.anchor(from));
                self.pending_in_view = match self.blocks.last_mut() {
                    Some((_, _, _, _, Some(in_view))) => *in_view,
                    Some((block, clip, dx, dy, known)) => {
                        let r = proto::get_bounding_client_rect(&block);
                        let rect = Rect {
                            x: r.x() + *dx,
                            y: r.y() + *dy,
                            width: r.width().max(1.0),
                            height: r.height().max(1.0),
                        };
                        *known.insert(intersect(&rect, clip).is_some())
                    }
                    None => true,
                };
            }
            if self.pending.len() < CONTEXT_COLLECT_MAX {
                self.pending.push_str(sep);
                self.pending.push_str(t);
            }
            return;
        };
        let buf = match &mut self.lines[i] {
            Line::Element(seen) => &mut seen.text,
            Line::Heading { text, .. } | Line::Text { text, .. } => text,
        };
        if buf.len() < TEXT_COLLECT_MAX {
            buf.push_str(sep);
            buf.push_str(t);
        }
    }

    /// Visits one element and, unless hidden, its subtree.
    pub(crate) fn visit(&mut self, el: &Element, frame: &Frame, ctx: Ctx) {
        if crate::deadline::expired(el) {
            return;
        }
        let tag = proto::local_name(&el);
        if matches!(
            tag.as_str(),
            "script" | "style" | "noscript" | "template" | "head" | "meta" | "link" | "title"
        ) {
            return;
        }
        let has_attrs = proto::has_attributes(el);
        let mut aria_hidden = false;
        if has_attrs {
            if dom::has(el, Name::Inert) {
                return;
            }
            aria_hidden =
                dom::get(el, Name::AriaHidden).is_some_and(|v| v.eq_ignore_ascii_case("true"));
            // A control hidden from screen readers but shown and given
            // listeners of its own (a spinner's arrows) is used by a
            // person all the same.
            if aria_hidden && !self.ignore_aria_hidden && !crate::listeners::has(el) {
                self.aria_hidden_skipped += 1;
                return;
            }
        }
        // What the computed style says, from the cache when neither this
        // element nor an ancestor changed since the last observation.
        let fresh = ctx.dirty || !frame.cached || style_cache::is_dirty(el);
        let cached = if fresh { None } else { style_cache::get(el) };
        let st = match cached {
            Some(st) => st,
            None => {
                let mut st = read_style(el, frame, self.hover.as_deref().filter(|_| frame.cached));
                // The items of a flex row are laid out side by side, though
                // each is a block box: a person reads their short texts as
                // one line ("Price $5"), so the walk does not break between
                // them (and `incremental.rs` takes the row for the block).
                // Kept with the element's style: a change of its parent's
                // is a change of its own (`Ctx::dirty`).
                st.block &= !ctx.row;
                if frame.cached {
                    style_cache::put(el, st);
                }
                st
            }
        };
        if st.skip {
            return;
        }
        // A native control a widget library hid and replaced (Tom Select,
        // Select2): the widget is what a person uses (`dom::replaced`).
        if matches!(tag.as_str(), "select" | "input") && dom::replaced(el) {
            return;
        }
        self.hidden_depth += usize::from(aria_hidden);
        let StyleBits { shown: shown_style, block, pointer, contents, scrolls, .. } = st;
        // Only a plain inline box (a `<span>`, `<b>`) lets the text on
        // either side of its edges touch.
        let separates = st.boxed
            || !matches!(
                tag.as_str(),
                "span"
                    | "b"
                    | "i"
                    | "em"
                    | "strong"
                    | "u"
                    | "s"
                    | "small"
                    | "code"
                    | "kbd"
                    | "mark"
                    | "sub"
                    | "sup"
                    | "font"
                    | "a"
                    | "abbr"
                    | "q"
                    | "tt"
                    | "var"
                    | "samp"
                    | "cite"
                    | "del"
                    | "ins"
                    | "bdi"
                    | "bdo"
                    | "time"
                    | "data"
            );
        if separates {
            self.glue = false;
        }
        // A pointer cursor only under the mouse is one all the same.
        let hovered = st.hover || ctx.hover;
        let pointer = pointer || hovered;

        let heading = match tag.as_str() {
            "h1" => 1,
            "h2" => 2,
            "h3" => 3,
            "h4" => 4,
            "h5" => 5,
            "h6" => 6,
            _ => 0,
        };
        // `cursor: pointer` and click, pointer or key listeners
        // (`listeners.rs`) mark script-made clickables. Inside an element
        // already listed, a pointer is part of that element — unless that
        // element is a plain box listed only for its listeners and the
        // pointer is this element's own — while a control with listeners
        // of its own (a star or bin in a clickable mail row) is a target
        // of its own.
        let plain_outer = self.open_elements > 0 && self.inside_plain();
        let listens = crate::listeners::has(el)
            && !matches!(tag.as_str(), "html" | "body" | "label")
            && (self.open_elements == 0 || (plain_outer && self.small_inside(el)));
        let mut by_listener = false;
        let mut interactive = is_interactive(el, &tag, has_attrs)
            || (pointer
                && !ctx.pointer
                && (self.open_elements == 0 || (plain_outer && self.inside_listener_only()))
                && !matches!(tag.as_str(), "html" | "body" | "label"))
            // The items of a clickable list or tree (menu entries, tree
            // nodes) are targets of their own inside it.
            || (pointer && tag == "li" && self.open_elements > 0)
            // So are those of a list listed only for its listeners (a
            // sortable list, a suggestion menu that delegates to them).
            || (tag == "li" && self.open_elements > 0 && self.inside_listener_only())
            // Or of one left unlisted because it has no box of its own
            // (a sortable grid of floated items).
            || (tag == "li" && self.open_elements == 0 && list_listens(el))
            || (pointer && st.boxed && self.open_elements > 0 && self.part_of_group(el))
            // An icon of its own inside a plain clickable box.
            || (plain_outer && pointer && self.own_icon(el, &tag, st))
            // A drag handle (`cursor: move` or `grab`, small) inside a
            // listed item: where a drag of the item must start (SortableJS'
            // `handle`).
            || (st.grab && !ctx.grab && self.open_elements > 0 && small_box(el));
        if !interactive && listens {
            interactive = true;
            by_listener = !pointer;
        }
        // A scrollable region is something a person uses too.
        let mut scroll = None;
        if scrolls && !matches!(tag.as_str(), "html" | "body" | "textarea" | "select") {
            {
                let extra = proto::scroll_height(&el) - proto::client_height(&el);
                if extra > 8 && proto::client_height(&el) > 0 {
                    let above = f64::from(proto::scroll_top(&el));
                    scroll = Some(ScrollInfo { above, below: f64::from(extra) - above });
                }
            }
        }
        // A heading inside a listed element (`<a><h3>Title</h3></a>`) is
        // that element's text, not a line of its own.
        let heading = if self.open_elements == 0 { heading } else { 0 };
        if block || heading > 0 {
            self.flush();
        }

        let mut opened = false;
        let mut region = false;
        let mut clip_pushed: Option<Rect> = None;
        if (interactive || heading > 0 || scroll.is_some()) && shown_style {
            let r = proto::get_bounding_client_rect(&el);
            if r.width() > 0.0 && r.height() > 0.0 && !self.unreachable(&r, frame) {
                let rect = Rect {
                    x: r.x() + frame.dx,
                    y: r.y() + frame.dy,
                    width: r.width(),
                    height: r.height(),
                };
                let clip = self.clip(frame);
                let in_viewport = intersect(&rect, &clip).is_some();

                if scroll.is_some() {
                    let visible = intersect(&rect, &clip).unwrap_or(Rect {
                        x: rect.x,
                        y: rect.y,
                        width: 0.0,
                        height: 0.0,
                    });
                    clip_pushed = Some(visible);
                }
                if !interactive && scroll.is_some() {
                    // Listed to be scrolled, not collecting its content's text.
                    interactive = true;
                    region = true;
                }
                if interactive {
                    let cover = if in_viewport { covering(el, &r, frame, &clip) } else { None };
                    if let Some(by) = cover {
                        let by = with_boxes(by);
                        self.covered.push(Covered { el: el.clone(), clip, rect: rect_of(&r), by });
                    } else {
                        self.flush();
                        let mut seen = self.describe(el, &tag, rect, in_viewport);
                        seen.scroll = scroll;
                        let anchor = self.anchor(el);
                        self.push_line(
                            Line::Element(Box::new(seen)),
                            Some(el.clone()),
                            anchor,
                            clip,
                        );
                        if !region {
                            self.open_elements += 1;
                            opened = true;
                            self.glue = false;
                        }
                        if by_listener {
                            self.listener_only.push(self.lines.len() - 1);
                        }
                    }
                } else {
                    let anchor = self.anchor(el);
                    self.push_line(
                        Line::Heading { level: heading, text: String::new(), in_viewport },
                        None,
                        anchor,
                        clip,
                    );
                    opened = true;
                    self.glue = false;
                }
                if opened {
                    self.opened.add(el);
                }
                if opened {
                    self.open.push(self.lines.len() - 1);
                }
            }
        }
        if st.image && shown_style && proto::first_element_child(&el).is_none() {
            self.note_icon(el, frame);
        }

        // An icon font's ligature inside a listed control (`<span
        // class="material-icons">send</span>`) is a picture: it names the
        // control like a CSS icon (`icon=send`) and is not its text, so
        // "send" next to "Submit" is no irreversible "send" (issue 19).
        let ligature = shown_style
            && !self.open.is_empty()
            && matches!(tag.as_str(), "i" | "span")
            && proto::first_element_child(&el).is_none()
            && icon_font(el, frame);
        if ligature {
            self.note_ligature(el);
        }
        // The text of a label whose control is listed is that control's
        // name already: not a line of its own.
        let label_of_listed = tag == "label"
            && !interactive
            && el.unchecked_ref::<web_sys::HtmlLabelElement>().control().is_some();
        let inner = Ctx {
            pointer,
            grab: st.grab,
            hover: hovered,
            text_hidden: (!shown_style && !contents) || label_of_listed || ligature,
            dirty: fresh,
            // A `display: contents` box's children are its parent's items.
            row: if contents { ctx.row } else { st.row },
        };
        if block {
            self.blocks.push((el.clone(), self.clip(frame), frame.dx, frame.dy, None));
        }
        if let Some(c) = clip_pushed {
            self.clips.push(c);
        }
        match tag.as_str() {
            "iframe" | "frame" => self.frame(el, frame, shown_style),
            "img" | "area" => {
                if let Some(alt) = dom::attr_named(el, Name::Alt).filter(|_| !inner.text_hidden) {
                    if !self.open.is_empty() {
                        self.add_text(&alt, el);
                    }
                }
            }
            "select" | "textarea" | "svg" | "math" | "video" | "audio" | "canvas" | "object" => {}
            "details" if !dom::has(el, Name::Open) => {
                // A closed `<details>` shows only its summary.
                let mut child = proto::first_element_child(&el);
                while let Some(c) = child {
                    if proto::local_name(&c) == "summary" {
                        self.visit(&c, frame, inner);
                    }
                    child = proto::next_element_sibling(&c);
                }
            }
            // What a slot of a shadow tree shows is the light content
            // assigned to it, in its place (a web component's button text
            // inside its inner `<button>`): the composed tree a person sees.
            "slot" if self.host.is_some() => {
                let assigned = proto::assigned_nodes(el);
                if assigned.is_empty() {
                    self.children(el, frame, inner);
                }
                for node in assigned {
                    match proto::node_type(&node) {
                        Node::ELEMENT_NODE => {
                            self.visit(node.unchecked_ref::<Element>(), frame, inner)
                        }
                        Node::TEXT_NODE if !inner.text_hidden => {
                            if let Some(t) = proto::node_value(&node) {
                                self.add_text(&t, &node);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {
                if let Some(shadow) = proto::shadow_root(&el) {
                    // Mutations inside a shadow root are not observed.
                    let outermost = self.host.is_none();
                    if outermost {
                        self.host = Some(el.clone());
                    }
                    self.shadows.push(shadow.clone());
                    // The light children show only where the shadow tree's
                    // slots put them (walked there); others do not show.
                    self.children(&shadow, frame, Ctx { dirty: true, ..inner });
                    if outermost {
                        self.host = None;
                    }
                } else {
                    self.children(el, frame, inner);
                }
            }
        }
        if block {
            self.flush();
            self.blocks.pop();
        }
        if separates || opened {
            self.glue = false;
        }
        if clip_pushed.is_some() {
            self.clips.pop();
        }
        if opened {
            let closed = self.open.pop();
            if closed.is_some_and(|i| matches!(self.lines[i], Line::Element(_))) {
                self.open_elements -= 1;
            }
            if let Some(i) = closed.filter(|i| self.listener_only.last() == Some(i)) {
                self.listener_only.pop();
                self.demote_delegate(i, el);
            } else if let Some(i) =
                closed.filter(|_| self.host.is_some() || proto::shadow_root(el).is_some())
            {
                // A web component (or a box of its shadow tree) listed for
                // its pointer cursor or listeners that holds the real
                // control (its `<button>`, its combobox `<input>`) and no
                // text of its own: the control is the one element.
                if self.plain_line(i) {
                    self.demote_delegate(i, el);
                }
            }
            if let Some(i) = closed {
                self.name_by_class(i, el);
            }
        }
        self.hidden_depth -= usize::from(aria_hidden);
    }

    /// Whether the innermost listed element is a plain box (not a native
    /// control, link, editor or ARIA widget): listed for its pointer
    /// cursor or its listeners.
    fn inside_plain(&self) -> bool {
        let Some(&i) = self.open.last() else { return false };
        let (Line::Element(outer), Some(node)) = (&self.lines[i], &self.nodes[i]) else {
            return false;
        };
        // A structural role (a tab's panel, a region) names a part of
        // the page, not a control: listed for its listeners, it is a box
        // like a plain one (its links are their own).
        let structural = outer.role.as_deref().is_none_or(|r| {
            matches!(
                r,
                "tabpanel"
                    | "region"
                    | "group"
                    | "article"
                    | "document"
                    | "main"
                    | "complementary"
                    | "list"
                    | "listitem"
                    | "presentation"
                    | "none"
            )
        });
        structural
            && !matches!(
                outer.tag.as_str(),
                "a" | "button" | "input" | "select" | "textarea" | "summary" | "label" | "option"
            )
            && !dom::has(node, Name::ContentEditable)
    }

    /// Whether line `i` is a plain listed box (see [`Walk::inside_plain`]).
    fn plain_line(&self, i: usize) -> bool {
        let (Line::Element(outer), Some(node)) = (&self.lines[i], &self.nodes[i]) else {
            return false;
        };
        outer.role.is_none()
            && !matches!(
                outer.tag.as_str(),
                "a" | "button" | "input" | "select" | "textarea" | "summary" | "label" | "option"
            )
            && !dom::has(node, Name::ContentEditable)
            && !dom::has(node, Name::TabIndex)
    }

    /// Whether `el` covers less than half of the innermost listed
    /// element's box (a part of it, not the whole under another name).
    fn small_inside(&self, el: &Element) -> bool {
        let Some(Line::Element(outer)) = self.open.last().map(|&i| &self.lines[i]) else {
            return false;
        };
        let r = proto::get_bounding_client_rect(el);
        r.width() * r.height() < outer.rect.width * outer.rect.height * 0.5
    }

    /// Whether the innermost listed element was listed only for its
    /// listeners (no pointer cursor): a pointer inside it is its own.
    fn inside_listener_only(&self) -> bool {
        self.open.last().is_some_and(|i| self.listener_only.last() == Some(i))
    }

    /// Whether `el` is a small icon that names itself (an image with
    /// `alt`, an `svg` or CSS icon with a label or title): inside a plain
    /// clickable box, a control of its own.
    fn own_icon(&self, el: &Element, tag: &str, st: StyleBits) -> bool {
        let named = || {
            dom::has(el, Name::AriaLabel)
                || dom::has(el, Name::Title)
                || (tag == "img" && dom::attr_named(el, Name::Alt).is_some_and(|a| !a.is_empty()))
        };
        let icon = matches!(tag, "img" | "svg" | "i") || st.image;
        if !icon || !named() {
            return false;
        }
        let r = proto::get_bounding_client_rect(el);
        r.width() > 0.0 && r.width() <= 48.0 && r.height() <= 48.0
    }

    /// A box listed only for its listeners that holds listed elements and
    /// no text of its own delegates its listeners to them (a list whose
    /// items are listed): not a control itself. Its line becomes empty
    /// text (the lines after it keep their places).
    fn demote_delegate(&mut self, i: usize, el: &Element) {
        let Line::Element(seen) = &self.lines[i] else { return };
        let holds = self.lines[i + 1..].iter().any(|l| matches!(l, Line::Element(_)));
        if !holds || !seen.text.trim().is_empty() || seen.icon.is_some() {
            return;
        }
        let in_viewport = seen.in_viewport;
        self.lines[i] = Line::Text { text: String::new(), in_viewport };
        self.nodes[i] = None;
        self.opened.delete(el);
    }

    /// Whether `el`, a clickable box inside an element listed only for its
    /// pointer cursor (a `div` of "Reply" and "Forward"), is one of several
    /// targets there: it has text and is less than half as wide.
    fn part_of_group(&self, el: &Element) -> bool {
        let Some(Line::Element(outer)) = self.open.last().map(|&i| &self.lines[i]) else {
            return false;
        };
        if outer.role.is_some()
            || matches!(
                outer.tag.as_str(),
                "a" | "button" | "input" | "select" | "textarea" | "summary" | "label" | "option"
            )
        {
            return false;
        }
        let r = proto::get_bounding_client_rect(&el);
        r.width() > 0.0
            && r.width() < outer.rect.width * 0.5
            && proto::text_content(&el).is_some_and(|t| !t.trim().is_empty())
    }

    /// Names the element of line `i` by its class when nothing else names
    /// it (an icon-only control drawn from a sprite or an icon font).
    fn name_by_class(&mut self, i: usize, el: &Element) {
        let Line::Element(seen) = &self.lines[i] else { return };
        let unnamed = seen.text.trim().is_empty()
            && seen.icon.is_none()
            && seen.aria_label.is_none()
            && seen.title.is_none()
            && seen.label.is_none()
            && seen.placeholder.is_none()
            && !matches!(seen.tag.as_str(), "input" | "select" | "textarea");
        if !unnamed {
            return;
        }
        let hint = Self::class_hint(el);
        if let Line::Element(seen) = &mut self.lines[i] {
            seen.icon = hint;
        }
    }

    /// A name for a listed element that has none (no text, label, title or
    /// image): the class of it or of what it holds that says what it does
    /// (`ui-spinner-up` → `spinner-up`, `fa-trash` → `trash`).
    fn class_hint(el: &Element) -> Option<String> {
        const SAYS: &[&str] = &[
            "up",
            "down",
            "prev",
            "previous",
            "next",
            "plus",
            "minus",
            "add",
            "remove",
            "close",
            "delete",
            "trash",
            "star",
            "edit",
            "search",
            "menu",
            "left",
            "right",
            "increment",
            "decrement",
            "more",
            "less",
            "expand",
            "collapse",
            "play",
            "pause",
            "like",
            "share",
            "settings",
            "cart",
            "heart",
            // Text editors' toolbars (Quill's `ql-bold`, `ql-color`).
            "bold",
            "italic",
            "underline",
            "strike",
            "color",
            "background",
            "align",
            "link",
            "image",
            "list",
            "indent",
            "clean",
            "undo",
            "redo",
            "back",
            "forward",
            "chevron",
            "arrow",
        ];
        let mut todo = vec![el.clone()];
        let mut looked = 0;
        while let Some(e) = todo.pop() {
            looked += 1;
            if looked > 12 {
                break;
            }
            let mut class = dom::get(&e, Name::Class).unwrap_or_default();
            // An icon named by its sprite (`<svg><use href="#chevron-left">`)
            // or a `data-icon` says the same.
            for attr in ["data-icon", "href", "xlink:href"] {
                if let Some(v) = proto::get_attribute(&e, attr) {
                    if attr == "data-icon" || proto::local_name(&e) == "use" {
                        let id = v.rsplit('#').next().unwrap_or_default();
                        class.push(' ');
                        class.push_str(id);
                    }
                }
            }
            for token in class.split_whitespace() {
                let words: Vec<&str> = token.split(['-', '_']).collect();
                if words.iter().any(|w| SAYS.contains(&w.to_ascii_lowercase().as_str())) {
                    let bare =
                        ["ui-", "fa-", "icon-", "glyphicon-", "bi-", "mdi-", "material-", "ql-"]
                            .iter()
                            .fold(token, |t, p| t.strip_prefix(p).unwrap_or(t));
                    return Some(bare.chars().take(40).collect());
                }
            }
            let mut child = e.last_element_child();
            while let Some(c) = child {
                todo.push(c.clone());
                child = c.previous_element_sibling();
            }
        }
        None
    }

    /// Names the innermost listed element after the icon `el` when nothing
    /// named it before (an icon-only control, or an icon before the text).
    fn note_icon(&mut self, el: &Element, frame: &Frame) {
        let Some(&i) = self.open.last() else { return };
        let Line::Element(seen) = &self.lines[i] else {
            return;
        };
        if seen.icon.is_some() || !seen.text.trim().is_empty() {
            return;
        }
        let name = icon_name(el, frame);
        if let Line::Element(seen) = &mut self.lines[i] {
            seen.icon = name;
        }
    }

    /// An icon font's ligature, before any text of the open element: its
    /// icon name.
    fn note_ligature(&mut self, el: &Element) {
        let Some(&i) = self.open.last() else { return };
        let Line::Element(seen) = &mut self.lines[i] else { return };
        if seen.icon.is_some() || !seen.text.trim().is_empty() {
            return;
        }
        let word = text::collapse(&proto::text_content(&el).unwrap_or_default());
        if !word.is_empty() && word.len() <= 40 && !word.contains(' ') {
            seen.icon = Some(word);
        }
    }

    /// Walks into a same-origin iframe; a cross-origin one (no
    /// `contentDocument` here) is left to its own content script.
    fn frame(&mut self, el: &Element, outer: &Frame, shown: bool) {
        let iframe = el.unchecked_ref::<HtmlIFrameElement>();
        let (Some(doc), Some(window)) = (iframe.content_document(), iframe.content_window()) else {
            // ---- frames.rs hook ----
            if let Some(p) = self.cross_origin_frame(el, outer).filter(|_| shown) {
                self.remote.push(p);
            }
            return;
        };
        // Only a frame of the top document's light tree is watched for
        // changes: after any other, the next observation walks it again.
        let watched = outer.cached && self.host.is_none() && self.in_frame.is_none();
        self.saw_frame |= !watched;
        let Some(root) = proto::document_element(&doc) else {
            return;
        };
        crate::listeners::refresh(&doc);
        let r = proto::get_bounding_client_rect(&el);
        let dx = outer.dx + r.x() + f64::from(el.client_left());
        let dy = outer.dy + r.y() + f64::from(el.client_top());
        let width = num(window.inner_width());
        let height = num(window.inner_height());
        let inner_box = Rect { x: dx, y: dy, width, height };
        let clip = intersect(&inner_box, &self.clip(outer)).unwrap_or(Rect {
            x: dx,
            y: dy,
            width: 0.0,
            height: 0.0,
        });
        let frame = Frame { window: window.clone(), dx, dy, clip, width, height, cached: false };
        if !watched {
            self.visit(&root, &frame, Ctx::default());
            return;
        }
        let rect =
            Rect { x: r.x() + outer.dx, y: r.y() + outer.dy, width: r.width(), height: r.height() };
        self.frames.push(FrameSeen {
            iframe: el.clone(),
            document: doc,
            rect,
            size: (width, height),
            scroll: (window.scroll_x().unwrap_or(0.0), window.scroll_y().unwrap_or(0.0)),
            breaks: self.breaks_at(&root, &frame),
        });
        self.in_frame = Some(el.clone());
        self.visit(&root, &frame, Ctx::default());
        self.in_frame = None;
    }

    /// Whether visiting `el` starts and ends with a clean break (a block
    /// that is walked into): nothing pending around it runs into it.
    fn breaks_at(&self, el: &Element, frame: &Frame) -> bool {
        let hidden = dom::get(el, Name::AriaHidden).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let st = read_style(el, frame, None);
        !dom::has(el, Name::Inert) && (self.ignore_aria_hidden || !hidden) && !st.skip && st.block
    }

    /// A cross-origin frame to observe (`frames.rs`), unless a person
    /// cannot see into it: no size, pushed off the page, or in view but
    /// covered at every point tried (a modal over it).
    fn cross_origin_frame(
        &mut self,
        el: &Element,
        outer: &Frame,
    ) -> Option<crate::frames::Pending> {
        let r = proto::get_bounding_client_rect(&el);
        let (width, height) =
            (f64::from(proto::client_width(&el)), f64::from(proto::client_height(&el)));
        if width <= 0.0 || height <= 0.0 || self.unreachable(&r, outer) {
            return None;
        }
        let dx = outer.dx + r.x() + f64::from(el.client_left());
        let dy = outer.dy + r.y() + f64::from(el.client_top());
        let clip = self.clip(outer);
        let visible = intersect(&Rect { x: dx, y: dy, width, height }, &clip);
        if visible.is_some() {
            if let Some(by) = covering(el, &r, outer, &clip) {
                // Kept like a covered element: uncovered later, it is asked.
                let by = with_boxes(by);
                self.covered.push(Covered { el: el.clone(), clip, rect: rect_of(&r), by });
                return None;
            }
        }
        // Only a frame of the top document's light tree is asked again by a
        // re-observation that re-reads the rest in place (`incremental.rs`).
        self.saw_frame |= !(outer.cached && self.host.is_none() && self.in_frame.is_none());
        self.flush();
        let clip = visible.unwrap_or(Rect { x: dx, y: dy, width: 0.0, height: 0.0 });
        let view = crate::frames::View { dx, dy, clip };
        let (at, iframe, rect) = (self.lines.len(), el.clone(), rect_of(&r));
        Some(crate::frames::Pending { at, iframe, view, rect })
    }

    /// Reads what the model is told about an element.
    fn describe(&self, el: &Element, tag: &str, rect: Rect, in_viewport: bool) -> Seen {
        let disabled = dom::is_disabled(el, tag);
        // A disabled element is reported, not offered: it gets no number.
        let index = if disabled { 0 } else { registry::number_of(el) };
        let input_type = (tag == "input").then(|| {
            dom::attr_named(el, Name::Type)
                .map_or_else(|| "text".to_owned(), |t| t.trim().to_ascii_lowercase())
        });
        let role = dom::attr_named(el, Name::Role)
            .and_then(|r| r.split_whitespace().next().map(str::to_ascii_lowercase));
        let mut seen = Seen {
            index,
            tag: tag.to_owned(),
            name: dom::attr_named(el, Name::NameAttr),
            placeholder: dom::attr_named(el, Name::Placeholder),
            aria_label: dom::attr_named(el, Name::AriaLabel),
            title: dom::attr_named(el, Name::Title),
            disabled,
            invalid: dom::attr_named(el, Name::AriaInvalid)
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            expanded: dom::attr_named(el, Name::AriaExpanded)
                .map(|v| v.eq_ignore_ascii_case("true")),
            rect,
            in_viewport,
            ..Seen::default()
        };
        if tag == "a" {
            seen.href =
                dom::attr_named(el, Name::Href).and_then(|h| text::shown_href(&h, &self.origin));
        }
        seen.target = navigation_target(el, tag, input_type.as_deref());
        let field = matches!(tag, "input" | "select" | "textarea");
        if field {
            seen.required = dom::has(el, Name::Required);
            seen.label = self.labels.borrow_mut().of(el);
            seen.readonly = tag != "select" && dom::has(el, Name::ReadOnly);
            seen.multiple = tag == "select" && dom::has(el, Name::Multiple);
        } else if let Some(e) = dom::get(el, Name::ContentEditable) {
            let e = e.trim().to_ascii_lowercase();
            seen.editor = e.is_empty() || e == "true" || e == "plaintext-only";
        }
        let aria_true = |name: Name| {
            dom::attr_named(el, name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        };
        seen.readonly |= aria_true(Name::AriaReadOnly);
        seen.multiple |= aria_true(Name::AriaMultiSelectable);
        match (tag, input_type.as_deref()) {
            ("input", Some("checkbox" | "radio")) => {
                seen.checked = el.unchecked_ref::<HtmlInputElement>().checked();
            }
            ("input", Some("password")) => {}
            ("input", Some(_)) => {
                seen.value = Some(el.unchecked_ref::<HtmlInputElement>().value());
            }
            ("textarea", _) => {
                seen.value = Some(el.unchecked_ref::<HtmlTextAreaElement>().value());
            }
            ("select", _) => read_select(el, &mut seen),
            _ => {}
        }
        if let Some(r) = &role {
            if matches!(
                r.as_str(),
                "checkbox"
                    | "switch"
                    | "radio"
                    | "menuitemcheckbox"
                    | "menuitemradio"
                    | "option"
                    | "tab"
            ) && !field
            {
                seen.checked = dom::attr_named(el, Name::AriaChecked)
                    .is_some_and(|v| v.eq_ignore_ascii_case("true"));
            }
        }
        // A slider says where it stands and between what: its input's
        // value, or an ARIA slider's `aria-valuetext` / `aria-valuenow`
        // (a range slider library's handle).
        let aria_slider = !field
            && role.as_deref().is_some_and(|r| matches!(r, "slider" | "spinbutton" | "scrollbar"));
        if aria_slider {
            let text = dom::attr_named(el, Name::AriaValueText).filter(|t| !t.trim().is_empty());
            seen.value = text.or_else(|| dom::attr_named(el, Name::AriaValueNow).map(trim_number));
        }
        let range = input_type.as_deref() == Some("range");
        if let (true, Some(v)) = (aria_slider || range, seen.value.as_mut()) {
            let (lo, hi) = if range {
                (
                    dom::attr_named(el, Name::Min).map_or_else(|| "0".to_owned(), trim_number),
                    dom::attr_named(el, Name::Max).map_or_else(|| "100".to_owned(), trim_number),
                )
            } else {
                (
                    dom::attr_named(el, Name::AriaValueMin).map(trim_number).unwrap_or_default(),
                    dom::attr_named(el, Name::AriaValueMax).map(trim_number).unwrap_or_default(),
                )
            };
            if !lo.is_empty() && !hi.is_empty() {
                v.push_str(&format!(" of {lo}–{hi}"));
            }
        }
        seen.selected =
            dom::attr_named(el, Name::AriaSelected).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if tag == "summary" && seen.expanded.is_none() {
            seen.expanded = proto::parent_element(&el)
                .filter(|p| proto::local_name(&p) == "details")
                .map(|p| dom::has(&p, Name::Open));
        }
        if field && !seen.invalid && !seen.disabled {
            // The browser's own verdict, once the person has typed something.
            let has_value = seen.value.as_ref().is_some_and(|v| !v.is_empty());
            seen.invalid = has_value && dom::matches(el, Name::Invalid);
        }
        if let Some(ids) =
            dom::attr_named(el, Name::AriaLabelledBy).filter(|_| seen.aria_label.is_none())
        {
            seen.label = labelled_by(el, &ids).or(seen.label);
        }
        // A combobox, list box or slider of a library, named by nothing of
        // its own: the short line just before it, as a person reads it.
        let widget = role.as_deref().is_some_and(|r| {
            matches!(r, "combobox" | "listbox" | "slider" | "spinbutton" | "searchbox" | "textbox")
        });
        if widget && seen.label.is_none() && seen.aria_label.is_none() {
            seen.label = dom::label_before(el);
        }
        seen.role = role;
        if tag == "label" && seen.role.is_none() {
            // Listed for a hidden checkbox or radio (a styled one): it says
            // what it is and whether it is checked.
            let control = el.unchecked_ref::<web_sys::HtmlLabelElement>().control();
            if let Some(c) = control.filter(|c| proto::local_name(c) == "input") {
                let input = c.unchecked_ref::<HtmlInputElement>();
                let kind = input.type_();
                if matches!(kind.as_str(), "checkbox" | "radio") {
                    seen.checked = input.checked();
                    // A switch says so (`<input type=checkbox role=switch>`).
                    let switch = proto::get_attribute(&c, "role")
                        .is_some_and(|r| r.trim().eq_ignore_ascii_case("switch"));
                    seen.role = Some(if switch { "switch".to_owned() } else { kind });
                }
            }
        }
        seen.input_type = input_type;
        seen
    }
}

/// A number as a person reads it: `20.0` → `20`, `1.50` → `1.5`.
fn trim_number(v: String) -> String {
    let t = v.trim();
    match t.parse::<f64>() {
        Ok(n) if n.is_finite() => {
            let mut s = format!("{n}");
            if s.contains('e') {
                s = t.to_owned();
            }
            s
        }
        _ => t.to_owned(),
    }
}

/// The options of a `<select>` and the chosen one, when it is not the first
/// (of a `multiple` one: all the chosen ones).
pub(crate) fn read_select(el: &Element, seen: &mut Seen) {
    let select = el.unchecked_ref::<web_sys::HtmlSelectElement>();
    let count = select.length();
    let option_text = |i: u32| {
        select
            .item(i)
            .map(|o| o.unchecked_ref::<web_sys::HtmlOptionElement>().text())
            .unwrap_or_default()
    };
    seen.option_count = count as usize;
    seen.options = text::options_shown((0..count).map(option_text));
    let chosen = select.selected_index();
    if select.multiple() {
        // Every chosen option of a list box (none is chosen by default).
        let chosen_one = |i: &u32| {
            let option = select.item(*i);
            option.is_some_and(|o| o.unchecked_ref::<web_sys::HtmlOptionElement>().selected())
        };
        let all: Vec<String> =
            (0..count).filter(chosen_one).map(|i| text::collapse(&option_text(i))).collect();
        if !all.is_empty() {
            seen.value = Some(all.join(", "));
        }
    } else if chosen > 0 {
        seen.value = Some(option_text(chosen as u32));
    }
}

/// The text of the elements named by `aria-labelledby`.
/// Where activating `el` navigates: a link's resolved address; for a
/// submit button (its `formaction`, else its form's `action`) or a text
/// field whose Enter submits its form, the form's resolved address.
fn navigation_target(el: &Element, tag: &str, input_type: Option<&str>) -> Option<String> {
    // The form's `action` through its prototype: a field named `action`
    // shadows the property (crate::proto).
    let form_action = |form: Option<web_sys::HtmlFormElement>| form.map(|f| proto::form_action(&f));
    let url = match (tag, input_type) {
        ("a", _) => dom::has(el, Name::Href)
            .then(|| el.unchecked_ref::<web_sys::HtmlAnchorElement>().href()),
        ("button", _) => {
            let b = el.unchecked_ref::<web_sys::HtmlButtonElement>();
            if b.type_() != "submit" {
                None
            } else if dom::has(el, Name::FormAction) {
                Some(b.form_action())
            } else {
                form_action(b.form())
            }
        }
        ("input", Some("submit" | "image")) => {
            let i = el.unchecked_ref::<HtmlInputElement>();
            if dom::has(el, Name::FormAction) {
                Some(i.form_action())
            } else {
                form_action(i.form())
            }
        }
        ("input", Some(t))
            if !matches!(
                t,
                "checkbox" | "radio" | "file" | "button" | "reset" | "hidden" | "range" | "color"
            ) =>
        {
            form_action(el.unchecked_ref::<HtmlInputElement>().form())
        }
        _ => None,
    }?;
    let url = url.trim();
    (url.starts_with("http://") || url.starts_with("https://")).then(|| url.to_owned())
}

fn labelled_by(el: &Element, ids: &str) -> Option<String> {
    let doc: Document = proto::owner_document(&el)?;
    // In a shadow tree the ids are the shadow root's (a design system's
    // combobox labelled by its own `<label id="label">`).
    let root = proto::get_root_node(&el);
    let in_shadow = proto::node_type(&root) == dom::FRAGMENT_NODE;
    let find = |id: &str| {
        if in_shadow {
            let quoted = id.replace('\\', "\\\\").replace('"', "\\\"");
            proto::query_selector(&root, &format!("[id=\"{quoted}\"]")).ok().flatten()
        } else {
            proto::get_element_by_id(&doc, id)
        }
    };
    // Through slots: the label's text may be the host's light content.
    let text: Vec<String> = ids
        .split_whitespace()
        .filter_map(find)
        .filter_map(|e| dom::label_text_of(e.unchecked_ref()).or_else(|| proto::text_content(&e)))
        .map(|t| text::collapse(&t))
        .collect();
    Some(text.join(" ")).filter(|t| !t.is_empty())
}

/// Whether an element is interactive by its tag, its attributes or its role
/// (the `cursor: pointer` rule is the caller's).
fn is_interactive(el: &Element, tag: &str, has_attrs: bool) -> bool {
    let by_tag = match tag {
        "a" => dom::has(el, Name::Href),
        "button" | "select" | "textarea" | "summary" => true,
        "input" => {
            !dom::get(el, Name::Type).is_some_and(|t| t.trim().eq_ignore_ascii_case("hidden"))
        }
        // A label is listed when it is the way to its control: the
        // control itself is hidden (a styled checkbox); otherwise the
        // control is listed, named by the label.
        "label" => el
            .unchecked_ref::<web_sys::HtmlLabelElement>()
            .control()
            .is_some_and(|c| control_hidden(&c)),
        _ => false,
    };
    if by_tag {
        return true;
    }
    if !has_attrs {
        return false;
    }
    if let Some(role) = dom::get(el, Name::Role) {
        let first = role.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
        if INTERACTIVE_ROLES.contains(&first.as_str()) {
            return true;
        }
    }
    if let Some(editable) = dom::get(el, Name::ContentEditable) {
        let e = editable.trim().to_ascii_lowercase();
        if e.is_empty() || e == "true" || e == "plaintext-only" {
            return true;
        }
    }
    if dom::get(el, Name::TabIndex)
        .and_then(|t| t.trim().parse::<i32>().ok())
        .is_some_and(|t| t >= 0)
    {
        return true;
    }
    // Items of drag-and-drop lists (`drag_and_drop` needs their numbers).
    dom::has(el, Name::OnClick) || dom::get(el, Name::Draggable).as_deref() == Some("true")
}

/// The overlap of two rectangles, if they overlap.
pub(crate) fn intersect(a: &Rect, b: &Rect) -> Option<Rect> {
    let x0 = a.x.max(b.x);
    let y0 = a.y.max(b.y);
    let x1 = (a.x + a.width).min(b.x + b.width);
    let y1 = (a.y + a.height).min(b.y + b.height);
    (x1 > x0 && y1 > y0).then_some(Rect { x: x0, y: y0, width: x1 - x0, height: y1 - y0 })
}

/// Whether the element shows at the centre of its visible part, asked of
/// the document or shadow root that holds it. `local` is the element's
/// rectangle in its own document's viewport.
pub(crate) fn uncovered(
    el: &Element,
    local: &web_sys::DomRect,
    frame: &Frame,
    clip: &Rect,
) -> bool {
    covering(el, local, frame, clip).is_none()
}

/// What covers the element at every hit-test point of [`uncovered`]: the
/// elements hit instead, each once (empty when some point had no answer);
/// `None` when it shows.
pub(crate) fn covering(
    el: &Element,
    local: &web_sys::DomRect,
    frame: &Frame,
    clip: &Rect,
) -> Option<Vec<Element>> {
    // The part of the element inside its own frame and inside the top window.
    let own = Rect { x: 0.0, y: 0.0, width: frame.width, height: frame.height };
    let clip_local =
        Rect { x: clip.x - frame.dx, y: clip.y - frame.dy, width: clip.width, height: clip.height };
    let r = rect_of(local);
    let part = intersect(&r, &own).and_then(|p| intersect(&p, &clip_local))?;
    // The centre first, then four points towards the corners: an element
    // partly covered (a sticky header over a link) is still usable where it
    // shows; one covered at all five (a modal over the page) is not.
    const POINTS: [(f64, f64); 5] = [(0.5, 0.5), (0.2, 0.2), (0.8, 0.2), (0.2, 0.8), (0.8, 0.8)];
    let mut by: Vec<Element> = Vec::new();
    let mut unanswered = false;
    for (fx, fy) in POINTS {
        let (x, y) = (part.x + part.width * fx, part.y + part.height * fy);
        match dom::element_at(el, x, y) {
            Some(hit) if dom::hit_belongs(el, &hit) => return None,
            Some(hit) if !by.contains(&hit) => by.push(hit),
            Some(_) => {}
            None => unanswered = true,
        }
    }
    // No answer at any point (the hit test cannot see there): keep it.
    if by.is_empty() {
        return None;
    }
    if unanswered {
        by.clear();
    }
    Some(by)
}

/// The incremental part: computed-style verdicts cached per element, and a
/// `MutationObserver` on the top document that keeps the set of nodes
/// changed since the last observation. The next walk reads the style only
/// of changed elements and their descendants (and of new ones); everything
/// else comes from the cache. A change of window size, or of a `<style>`,
/// `<link>` or anything in `<head>`, empties the cache.
pub(crate) mod style_cache {
    use std::cell::RefCell;

    use wasm_bindgen::JsCast;
    use wasm_bindgen::prelude::*;
    use web_sys::{Document, Element, MutationObserver, MutationObserverInit, MutationRecord};

    use super::StyleBits;
    use crate::proto;

    struct State {
        observer: MutationObserver,
        _callback: Closure<dyn FnMut(js_sys::Array)>,
        /// element → packed [`StyleBits`].
        cache: js_sys::Map,
        /// Nodes changed since the last observation.
        dirty: js_sys::Set,
        size: (f64, f64),
        document: Document,
    }

    thread_local! {
        static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
    }

    fn pack(s: StyleBits) -> f64 {
        let mut n = 0u32;
        for (i, b) in [
            s.skip, s.shown, s.block, s.pointer, s.contents, s.scrolls, s.boxed, s.image, s.hover,
            s.row, s.grab,
        ]
        .into_iter()
        .enumerate()
        {
            if b {
                n |= 1 << i;
            }
        }
        f64::from(n)
    }

    fn unpack(v: f64) -> StyleBits {
        let n = v as u32;
        let bit = |i: u32| n & (1 << i) != 0;
        StyleBits {
            skip: bit(0),
            shown: bit(1),
            block: bit(2),
            pointer: bit(3),
            contents: bit(4),
            scrolls: bit(5),
            boxed: bit(6),
            image: bit(7),
            hover: bit(8),
            row: bit(9),
            grab: bit(10),
        }
    }

    /// Records one batch of mutations.
    fn record(records: js_sys::Array) {
        STATE.with(|s| {
            let s = s.borrow();
            let Some(s) = s.as_ref() else { return };
            for r in records.iter() {
                let r: MutationRecord = r.unchecked_into();
                let Some(target) = r.target() else { continue };
                let styling = proto::node_name(&target).eq_ignore_ascii_case("head")
                    || proto::node_name(&target).eq_ignore_ascii_case("style")
                    || proto::node_name(&target).eq_ignore_ascii_case("link")
                    || proto::parent_node(&target)
                        .is_some_and(|p| proto::node_name(&p).eq_ignore_ascii_case("head"));
                if styling {
                    s.cache.clear();
                }
                s.dirty.add(&target);
            }
        });
    }

    /// Starts an observation: sets the observer up the first time, empties
    /// the cache when the document or the window size changed.
    pub fn begin(document: &Document, width: f64, height: f64) {
        // Deliver the changes made since the last observation now.
        let pending = STATE.with(|s| s.borrow().as_ref().map(|s| s.observer.take_records()));
        if let Some(p) = pending {
            record(p);
        }
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(st) = s.as_ref() {
                if st.document != *document || st.size != (width, height) {
                    st.cache.clear();
                    st.dirty.clear();
                }
            }
            if s.as_ref().is_none_or(|st| st.document != *document) {
                if let Some(old) = s.take() {
                    old.observer.disconnect();
                }
                let callback = Closure::<dyn FnMut(js_sys::Array)>::new(record);
                let Ok(observer) = MutationObserver::new(callback.as_ref().unchecked_ref()) else {
                    return;
                };
                let init = MutationObserverInit::new();
                init.set_subtree(true);
                init.set_child_list(true);
                init.set_attributes(true);
                if let Some(root) = proto::document_element(&document) {
                    if observer.observe_with_options(&root, &init).is_err() {
                        return;
                    }
                }
                *s = Some(State {
                    observer,
                    _callback: callback,
                    cache: js_sys::Map::new(),
                    dirty: js_sys::Set::new(&JsValue::UNDEFINED),
                    size: (width, height),
                    document: document.clone(),
                });
            }
            if let Some(st) = s.as_mut() {
                st.size = (width, height);
            }
        });
    }

    /// Ends an observation: the changes seen are dealt with, and Errand's
    /// own writes since (the overlay) are dropped.
    pub fn end() {
        STATE.with(|s| {
            if let Some(s) = s.borrow().as_ref() {
                let _ = s.observer.take_records();
                s.dirty.clear();
            }
        });
    }

    /// Runs `write` (Errand's own DOM writes) unseen by this observer.
    pub fn own_writes<T>(write: impl FnOnce() -> T) -> T {
        let observer = STATE.with(|s| s.borrow().as_ref().map(|s| s.observer.clone()));
        crate::dom::writes_unseen(observer.as_ref(), record, write)
    }

    /// Records that `node`'s computed style changed without a mutation
    /// (a transition or animation ended).
    pub fn mark(node: &web_sys::Node) {
        STATE.with(|s| {
            if let Some(s) = s.borrow().as_ref() {
                s.dirty.add(node);
            }
        });
    }

    /// Whether the element changed since the last observation.
    /// Forgets every element's style (a change of style sheets the
    /// observer cannot see: the emulated hover's adopted sheet).
    pub fn clear() {
        STATE.with(|s| {
            if let Some(s) = s.borrow().as_ref() {
                s.cache.clear();
            }
        });
    }

    pub fn is_dirty(el: &Element) -> bool {
        STATE.with(|s| s.borrow().as_ref().is_none_or(|s| s.dirty.has(el)))
    }

    pub fn get(el: &Element) -> Option<StyleBits> {
        STATE.with(|s| s.borrow().as_ref().and_then(|s| s.cache.get(el).as_f64()).map(unpack))
    }

    pub fn put(el: &Element, bits: StyleBits) {
        STATE.with(|s| {
            if let Some(s) = s.borrow().as_ref() {
                s.cache.set(el, &pack(bits).into());
            }
        });
    }
}

/// Whether a label's control cannot be seen or used directly.
fn control_hidden(control: &web_sys::HtmlElement) -> bool {
    let r = proto::get_bounding_client_rect(&control);
    if r.width() < 2.0 || r.height() < 2.0 {
        return true;
    }
    let Some(style) =
        dom::window_of(control).and_then(|w| w.get_computed_style(control).ok().flatten())
    else {
        return false;
    };
    let prop = |name: Name| dom::property(&style, name);
    prop(Name::Opacity).parse::<f64>().is_ok_and(|o| o <= 0.01)
        || prop(Name::Visibility) == "hidden"
        || prop(Name::Display) == "none"
}

#[cfg(test)]
mod tests {
    use super::Numbers;

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
