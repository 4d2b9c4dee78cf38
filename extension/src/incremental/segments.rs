//! Segments: each change widened to a subtree the walk starts and ends
//! with a clean break (a listed element, a frame, an empty box, a block),
//! its context (style inherited, scroll box, row) and its run of kept lines.

use super::*;

/// Elements the first walk leaves out with what is inside them.
pub(super) const HIDDEN: &str = "[aria-hidden=true i]";

/// Whether the walk leaves `e` out: `inert`, or `aria-hidden` unless it is
/// the walk without it.
pub(super) fn skipped(e: &Element, ignore_aria_hidden: bool) -> bool {
    proto::has_attribute(&e, "inert")
        || (!ignore_aria_hidden
            && proto::get_attribute(&e, "aria-hidden")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")))
}

/// What a segment is: why the walk breaks cleanly before and after it, so
/// that its lines can be walked again alone.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Kind {
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
pub(super) fn contains(s: &Element, node: &Element) -> bool {
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
pub(super) fn listed_line(cache: &Cache, s: &Element) -> Option<usize> {
    let (lo, hi) = range(cache, s);
    (lo < hi).then_some(lo).filter(|&lo| {
        matches!((&cache.lines[lo], &cache.nodes[lo]),
        (Line::Element(seen), Some(el)) if el == s && seen.scroll.is_none() && {
            let now = proto::client_rect(s);
            (now.x, now.y, now.width, now.height)
                == (seen.rect.x, seen.rect.y, seen.rect.width, seen.rect.height)
        })
    })
}

/// Elements inside an element changed alone (`empty_alone`) at most: each
/// is checked before and after its walk.
pub(super) const ALONE_MAX: u32 = 16;

/// Whether `el`, changed only in its attributes, can be walked again alone
/// because it showed nothing and holds no text: no kept line, no text
/// inside it, and nothing that makes the walk break the context text
/// around it (`flows_alone`). A zero-size link around an empty icon is
/// one; walking the block around it (a page's whole masthead) would cost
/// a third of the page's walk.
pub(super) fn empty_alone(el: &Element, changes: &Changes, cache: &Cache) -> bool {
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
pub(super) fn flows_alone(el: &Element) -> bool {
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
pub(super) fn segments(
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
        // slots put them (`observe/`): the outermost such host.
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
pub(super) fn segment_of(
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
pub(super) fn ctx_of(s: &Element) -> Option<Ctx> {
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
pub(super) fn row_around(parent: &Element, bits: crate::observe::StyleBits) -> Option<bool> {
    let (mut at, mut bits) = (parent.clone(), bits);
    while bits.contents {
        at = proto::parent_element(&at)?;
        bits = style_cache::get(&at)?;
    }
    Some(bits.row)
}

/// The visible part of the innermost scroll box around `s` as the walk
/// pushed it (each one cut to the ones around it), if any.
pub(super) fn clip_around(s: &Element, top: &Frame) -> Option<Rect> {
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
        let rect = proto::client_rect(b);
        if rect.width <= 0.0 || rect.height <= 0.0 {
            continue;
        }
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
pub(super) fn side(anchors: &[Node], i: usize, s: &Element) -> i8 {
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
pub(super) fn range(cache: &Cache, s: &Element) -> (usize, usize) {
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
