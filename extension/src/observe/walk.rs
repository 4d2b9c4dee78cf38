//! The walk itself: the state of one walk ([`Walk`]) and the visit of each
//! node — text runs joined into lines and context, blocks and scrolling
//! boxes tracked, shadow roots entered, elements handed to the listing
//! rules (what reacts under the pointer: by tag, pointer cursor, listeners
//! — a label's too when it labels no control — or a `:hover` rule that
//! shows a row's controls).

use super::*;

/// The most empty usable elements a walk keeps to check again: beyond
/// them, a page's later ones may show unnoticed until something else
/// changes (checking each costs a layout read).
pub(crate) const MAX_EMPTY: usize = 256;

/// The attributes every element's visit asks about
/// ([`proto::attributes_present`]): `inert` (bit [`INERT`]) and
/// `aria-hidden` ([`ARIA_HIDDEN`]).
const VISIT_NAMES: [&str; 2] = ["inert", "aria-hidden"];
const INERT: u32 = 1;
const ARIA_HIDDEN: u32 = 2;

thread_local! {
    static VISIT_ATTRIBUTES: js_sys::Array =
        VISIT_NAMES.iter().map(|&n| wasm_bindgen::JsValue::from_str(n)).collect();
    /// A walk left out what nests deeper than [`MAX_DEPTH`] since the last
    /// [`take_cut`].
    static CUT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// How deep a walk goes (elements in elements, shadow roots and frames
/// counted from where it starts): as deep as a browser's HTML parser nests
/// what it parses (Chromium's limit). A script can nest deeper; what is
/// inside is left out, and the observation says so ([`was_cut`]). Each
/// level is a frame of the walk's recursion on the module's stack (1.5 KB
/// or so; the stack is 2 MB, `scripts/build-extension.sh`): a page nested
/// thousands deep made it overflow, and the crate was broken for that page.
pub(crate) const MAX_DEPTH: u32 = 512;

/// Whether a walk left something out for its depth since the last
/// [`take_cut`], which says so and forgets it.
pub(crate) fn take_cut() -> bool {
    CUT.with(|c| c.replace(false))
}

/// Whether a walk left something out for its depth since the last
/// [`take_cut`].
pub(crate) fn was_cut() -> bool {
    CUT.with(|c| c.get())
}

/// The state of one walk.
pub(crate) struct Walk {
    pub(crate) lines: Vec<Line>,
    /// The element of each line (`None` for text and headings).
    pub(crate) nodes: Vec<Option<Element>>,
    /// Per line, the node of the top document's light tree it comes from
    /// (the outermost shadow host for what a shadow tree shows): lines are
    /// in the document order of their anchors, which is how
    /// `incremental/` finds the lines of a subtree.
    pub(crate) anchors: Vec<Node>,
    /// Per line, the part of the viewport it was seen through (for the
    /// hit tests an incremental observation repeats).
    pub(crate) line_clips: Vec<Rect>,
    /// Elements left out because something covers them, with their clip.
    pub(crate) covered: Vec<Covered>,
    /// Usable elements left out because their box was empty (an icon
    /// drawn by CSS `content: url(…)` before its image came, a link around
    /// an image still loading): one that gets a box shows with no mutation
    /// to say so (`incremental/` checks them). At most [`MAX_EMPTY`].
    pub(crate) empty: Vec<Element>,
    /// The elements whose line collects the text inside them (listed
    /// elements that are not scroll regions, headings).
    pub(crate) opened: js_sys::Set,
    /// A same-origin iframe was walked that `incremental/` does not
    /// watch (one in a shadow tree or in another frame).
    pub(crate) saw_frame: bool,
    /// The same-origin iframes of the top document's light tree walked
    /// into (`incremental/` watches their documents).
    pub(crate) frames: Vec<FrameSeen>,
    /// Inside such a frame: the anchor of its lines.
    pub(super) in_frame: Option<Element>,
    /// The open shadow roots walked.
    pub(crate) shadows: Vec<web_sys::ShadowRoot>,
    /// The outermost shadow host being walked inside, if any.
    pub(super) host: Option<Element>,
    /// The anchor of the pending context text.
    pub(super) pending_anchor: Option<Node>,
    /// Lines (by position) collecting text: the innermost one gets it.
    pub(super) open: Vec<usize>,
    /// How many of the open lines are elements (not headings).
    pub(super) open_elements: usize,
    /// The open lines (by position) listed only for their listeners.
    pub(super) listener_only: Vec<usize>,
    pub(super) origin: String,
    /// Walk into `aria-hidden` subtrees anyway (the second walk).
    pub(crate) ignore_aria_hidden: bool,
    /// How many `aria-hidden` subtrees were left out.
    pub(crate) aria_hidden_skipped: usize,
    /// In the walk without `aria-hidden`: how many `aria-hidden` subtrees
    /// the walk is in.
    pub(crate) hidden_depth: usize,
    /// Per line: whether it is inside an `aria-hidden` subtree (read by
    /// `incremental/` to tell what the first walk would have found).
    pub(crate) line_hidden: Vec<bool>,
    /// The last text added ran to its end with no space after it, and no
    /// box came since: the next text joins it without a space.
    pub(super) glue: bool,
    /// Context text not inside any listed element, waiting for its block
    /// to end.
    pub(super) pending: String,
    /// Whether the block the pending text is in shows in the viewport.
    pub(super) pending_in_view: bool,
    /// The block-level elements being walked, innermost last, with the
    /// frame's offset and clip, to place pending text, and whether it
    /// shows in the viewport once asked (a block's text often comes in
    /// several runs between listed elements: its box is read once).
    pub(super) blocks: Vec<(Element, Rect, f64, f64, Option<bool>)>,
    /// The visible part of the scrolling boxes being walked, innermost
    /// last, in top-window pixels: what they clip is not in view.
    pub(crate) clips: Vec<Rect>,
    /// The top window's scroll position.
    pub(super) scroll: (f64, f64),
    /// Elements whose `:hover` rule gives the pointer cursor (`hover.rs`).
    pub(super) hover: Option<String>,
    /// Elements whose `:hover` rule shows something inside them
    /// (`hover.rs`).
    pub(super) reveal: Option<String>,
    /// Cross-origin frames met (`frames/` observes them).
    pub(crate) remote: Vec<crate::frames::Pending>,
    /// The fields' labels, found once per document or shadow root.
    pub(super) labels: std::cell::RefCell<crate::labels::Labels>,
    /// How many elements deep the walk is (see [`MAX_DEPTH`]).
    depth: u32,
}

impl Walk {
    pub(crate) fn new(origin: String, ignore_aria_hidden: bool) -> Walk {
        Walk {
            lines: Vec::new(),
            nodes: Vec::new(),
            anchors: Vec::new(),
            line_clips: Vec::new(),
            covered: Vec::new(),
            empty: Vec::new(),
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
            reveal: web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| crate::hover::reveal_selector(&d)),
            remote: Vec::new(),
            labels: Default::default(),
            depth: 0,
        }
    }

    /// Whether an element is pushed out of the top page (a skip link at
    /// -9999px), where no scrolling brings it into view.
    pub(super) fn unreachable(&self, r: &Rect, frame: &Frame) -> bool {
        let (x, y) = (r.x + frame.dx, r.y + frame.dy);
        x + r.width + self.scroll.0 <= 0.0 || y + r.height + self.scroll.1 <= 0.0
    }

    /// The part of the top viewport through which the current node shows.
    pub(super) fn clip(&self, frame: &Frame) -> Rect {
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
    pub(super) fn anchor(&self, node: &Node) -> Node {
        match (&self.in_frame, &self.host) {
            (Some(f), _) => f.clone().unchecked_into(),
            (None, Some(h)) => h.clone().unchecked_into(),
            (None, None) => node.clone(),
        }
    }

    pub(super) fn push_line(
        &mut self,
        line: Line,
        node: Option<Element>,
        anchor: Node,
        clip: Rect,
    ) {
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
    pub(super) fn children(&mut self, parent: &Node, frame: &Frame, ctx: Ctx) {
        // Each node, its kind and its tag or text (of an element, its
        // `VISIT_NAMES` attributes and whether it has a shadow root too) in
        // one call to the page.
        VISIT_ATTRIBUTES.with(|names| {
            let mut child = proto::first_child_read(parent, names);
            while let Some((node, read)) = child {
                match read {
                    proto::NodeRead::Element(head) => {
                        self.visit_tagged(node.unchecked_ref::<Element>(), head, frame, ctx)
                    }
                    proto::NodeRead::Text(t) if !ctx.text_hidden => self.add_text(&t, &node),
                    _ => {}
                }
                child = proto::next_sibling_read(&node, names);
            }
        })
    }

    /// Gives text to the innermost collecting line, or to the pending
    /// context text when no line collects.
    pub(super) fn add_text(&mut self, t: &str, from: &Node) {
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
                        let r = proto::client_rect(block);
                        let rect = Rect {
                            x: r.x + *dx,
                            y: r.y + *dy,
                            width: r.width.max(1.0),
                            height: r.height.max(1.0),
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
        let head = VISIT_ATTRIBUTES.with(|names| proto::ElementRead::of(el, names));
        self.visit_tagged(el, head, frame, ctx)
    }

    /// [`Walk::visit`] of an element whose tag, [`VISIT_NAMES`] attributes
    /// and shadow root were read (`head`); not deeper than [`MAX_DEPTH`].
    pub(super) fn visit_tagged(
        &mut self,
        el: &Element,
        head: proto::ElementRead,
        frame: &Frame,
        ctx: Ctx,
    ) {
        if self.depth >= MAX_DEPTH {
            CUT.with(|c| c.set(true));
            return;
        }
        self.depth += 1;
        self.visit_element(el, head, frame, ctx);
        self.depth -= 1;
    }

    fn visit_element(&mut self, el: &Element, head: proto::ElementRead, frame: &Frame, ctx: Ctx) {
        let proto::ElementRead { tag, present, shadow: has_shadow } = head;
        if crate::deadline::expired(el) {
            return;
        }
        if matches!(
            tag.as_str(),
            "script" | "style" | "noscript" | "template" | "head" | "meta" | "link" | "title"
        ) {
            return;
        }
        // Whether it has attributes, `inert` and `aria-hidden` (read with
        // its tag).
        let has_attrs = present & proto::ANY_ATTRIBUTE != 0;
        let mut aria_hidden = false;
        if has_attrs {
            if present & INERT != 0 {
                return;
            }
            aria_hidden = present & ARIA_HIDDEN != 0
                && dom::get(el, Name::AriaHidden).is_some_and(|v| v.eq_ignore_ascii_case("true"));
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
        let cached = if fresh { None } else { style_cache::get_kept(el) };
        let st = match cached {
            Some(st) => st,
            None => {
                let mut st = read_style(
                    el,
                    frame,
                    self.hover.as_deref().filter(|_| frame.cached),
                    self.reveal.as_deref().filter(|_| frame.cached),
                );
                // The items of a flex row are laid out side by side, though
                // each is a block box: a person reads their short texts as
                // one line ("Price $5"), so the walk does not break between
                // them (and `incremental/` takes the row for the block).
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
        // A label with listeners of its own (a todo's, double-clicked to
        // rename it) acts itself; one for a control that is listed names
        // that control and is not listed besides.
        let listens = crate::listeners::has(el)
            && !matches!(tag.as_str(), "html" | "body")
            && !(tag == "label" && labels_a_control(el))
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
        // A row whose controls appear only under the pointer (a todo's ×
        // on `li:hover`) is where a person points to get them: listed like
        // a box with listeners, the outermost only.
        let reveals = st.reveals
            && self.open_elements == 0
            && !matches!(tag.as_str(), "html" | "body" | "label");
        if !interactive && (listens || reveals) {
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
            let r = proto::client_rect(el);
            let empty = r.width <= 0.0 || r.height <= 0.0;
            if empty && interactive {
                if self.empty.len() < MAX_EMPTY {
                    self.empty.push(el.clone());
                }
                // Empty because its picture is still coming: what a person
                // sees a moment later (`ready::images_come`).
                // (A background image gives no box: only `content: url(…)`.)
                if let Some(url) = st.image.then(|| naming::content_image(el, frame)).flatten() {
                    crate::ready::image_coming(crate::ready::Coming::Url(url));
                } else if let Ok(Some(img)) = proto::query_selector(el, "img:not([loading=lazy])") {
                    crate::ready::image_coming(crate::ready::Coming::Img(img));
                }
            }
            if !empty && !self.unreachable(&r, frame) {
                let rect = Rect { x: r.x + frame.dx, y: r.y + frame.dy, ..r };
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
                        self.covered.push(Covered { el: el.clone(), clip, rect: r, by });
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
                if let Some(shadow) = has_shadow.then(|| proto::shadow_root(el)).flatten() {
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
            } else if let Some(i) = closed.filter(|_| self.host.is_some() || has_shadow) {
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
}
