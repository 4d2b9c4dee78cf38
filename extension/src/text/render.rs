//! The page's text: each line written once ([`Written`]), placed by screen
//! around the viewport, the scroll line, and the whole cut to its cap.

use super::*;

/// Less sideways scrolling than this is not worth a word.
pub(super) const SCROLL_MIN: i64 = 16;

/// The first line: how much of the page lies beyond the view each way, when
/// it can scroll at all: `Scroll: 100px above, 2300px below, 168px right`
/// (the words of a scrollable box's `scroll="…"`; a side with nothing
/// beyond it is left out, so a page at the top says no `above`).
pub fn scroll_line(vp: &Viewport) -> Option<String> {
    let below = (vp.page_height - vp.scroll_y - vp.height).round().max(0.0) as i64;
    let above = vp.scroll_y.round().max(0.0) as i64;
    let left = vp.scroll_x.round().max(0.0) as i64;
    let right = (vp.page_width - vp.scroll_x - vp.width).round().max(0.0) as i64;
    let mut parts = Vec::new();
    if above > 0 {
        parts.push(format!("{above}px above"));
    }
    if above > 0 || below > 0 {
        parts.push(format!("{below}px below"));
    }
    // A few pixels of overflow are a rounding or a stray margin.
    if left > SCROLL_MIN {
        parts.push(format!("{left}px left"));
    }
    if right > SCROLL_MIN {
        parts.push(format!("{right}px right"));
    }
    (!parts.is_empty()).then(|| format!("{SCROLL_LINE}{}", parts.join(", ")))
}

/// How the scroll line starts (page text starting so is quoted: [`defuse`]).
pub(super) const SCROLL_LINE: &str = "Scroll: ";

/// What kind of line a written line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Element,
    Heading,
    Text,
}

/// One line as written, with what the budget needs to know about it. It
/// depends only on its [`Line`] and the viewport, so an observation that
/// starts from the previous one keeps the written lines it did not re-walk.
#[derive(Debug, Clone)]
pub struct Written {
    pub(super) text: String,
    pub(super) kind: Kind,
    pub(super) in_viewport: bool,
    /// The screen it is on (see [`screen_of`]); `None` for text, which
    /// takes the screen of the elements around it.
    pub(super) screen: Option<i64>,
    /// For an element, the names a person reads on it; for text, its
    /// letters and digits: for leaving out text that repeats a name.
    pub(super) keys: Vec<String>,
}

/// The names a person reads on an element, to leave out context text that
/// only repeats them (a radio's label printed beside it).
pub(super) fn names_of(seen: &Seen) -> Vec<String> {
    [&seen.aria_label, &seen.label, &seen.placeholder, &seen.title]
        .into_iter()
        .flatten()
        .chain(std::iter::once(&seen.text))
        .map(|s| key(s))
        .filter(|k| !k.is_empty())
        .collect()
}

/// One line as written; `None` for a line that says nothing.
pub fn write_line(line: &Line, vp: &Viewport) -> Option<Written> {
    Some(match line {
        Line::Heading { level, text, in_viewport } => {
            let text = cut(collapse(text), TEXT_MAX);
            if text.is_empty() {
                return None;
            }
            Written {
                keys: vec![key(&text)],
                text: format!("{} {text}", "#".repeat(usize::from(*level))),
                kind: Kind::Heading,
                in_viewport: *in_viewport,
                screen: in_viewport.then_some(0),
            }
        }
        Line::Text { text, in_viewport } => {
            let max = if *in_viewport { TEXT_LINE_MAX } else { OFFSCREEN_TEXT_MAX };
            let text = cut(collapse(text), max);
            // Separators and stray punctuation (`|`, `.`) say nothing.
            if !text.chars().any(char::is_alphanumeric) {
                return None;
            }
            Written {
                keys: vec![key(&text)],
                text: defused(text),
                kind: Kind::Text,
                in_viewport: *in_viewport,
                screen: in_viewport.then_some(0),
            }
        }
        Line::Element(seen) => {
            let mut text = element_line(seen);
            if let Some(hint) = position_hint(&seen.rect, seen.in_viewport, vp.width, vp.height) {
                text.push(' ');
                text.push_str(&hint);
            }
            Written {
                text,
                kind: Kind::Element,
                in_viewport: seen.in_viewport,
                screen: screen_of(&seen.rect, seen.in_viewport, vp.height),
                keys: names_of(seen),
            }
        }
    })
}

/// What the budget needs per written line beyond the line itself.
pub(super) struct Placed {
    /// Context text that says nothing new (it repeats a neighbouring
    /// element's name, or text seen before off-screen): left out.
    pub(super) redundant: bool,
    pub(super) screen: Option<i64>,
}

/// Marks redundant text and gives off-screen text the screen of the
/// elements around it.
pub(super) fn place(out: &[&Written]) -> Vec<Placed> {
    let mut placed: Vec<Placed> =
        out.iter().map(|w| Placed { redundant: false, screen: w.screen }).collect();
    for i in 0..out.len() {
        if out[i].kind != Kind::Text {
            continue;
        }
        let k = out[i].keys[0].as_str();
        // Repeats the name of an element at most two lines away.
        let near = i.saturating_sub(2)..(i + 3).min(out.len());
        // (the whole name or how it starts: a long label's first words).
        let repeats_name = near
            .into_iter()
            .any(|j| out[j].kind == Kind::Element && out[j].keys.iter().any(|n| n.starts_with(k)));
        // A heading right beside it that says the same.
        let heading =
            |j: usize| out.get(j).is_some_and(|w| w.kind == Kind::Heading && w.keys[0] == k);
        let repeats_heading = heading(i + 1) || i.checked_sub(1).is_some_and(heading);
        // Off-screen text that repeats the line right before it (the same
        // line twice in one place). The same text elsewhere says something
        // of its own place: a post's author, a row's label.
        let repeats_text = !out[i].in_viewport
            && i.checked_sub(1).is_some_and(|j| out[j].kind == Kind::Text && out[j].keys[0] == k);
        placed[i].redundant = repeats_name || repeats_heading || repeats_text;
    }
    // Off-screen text takes the screen of the elements around it.
    let mut last = None;
    let mut next: Vec<Option<i64>> = vec![None; out.len()];
    for i in (0..out.len()).rev() {
        if out[i].kind == Kind::Element && out[i].screen.is_some_and(|s| s != 0) {
            last = out[i].screen;
        }
        next[i] = last;
    }
    let mut prev = None;
    for (i, w) in out.iter().enumerate() {
        if w.kind == Kind::Element {
            if w.screen.is_some_and(|s| s != 0) {
                prev = w.screen;
            }
        } else if placed[i].screen.is_none() {
            placed[i].screen = next[i].or(prev);
        }
    }
    placed
}

/// The whole page text: a scroll line, then one line per heading, text or
/// element, in document order, within `cap` bytes. Everything in the
/// viewport comes first; then the elements outside it, then its headings,
/// then its text (cut short); what does not fit is summarised in place.
/// Off the screen, a marker line says how many screens away what follows is.
pub fn render(lines: &[Line], vp: &Viewport, cap: usize) -> String {
    let written: Vec<Written> = lines.iter().filter_map(|l| write_line(l, vp)).collect();
    render_written(&written.iter().collect::<Vec<_>>(), vp, cap)
}

/// [`render`] from lines already written (see [`write_line`]).
pub fn render_written(written: &[&Written], vp: &Viewport, cap: usize) -> String {
    let placed = place(written);
    // Priorities: in view; elements out of view; headings; other text
    // (in document order within each). Lines are taken in that order while
    // they fit: every line of the ranks before the one that overflows, and
    // of that rank the lines before the first that does not fit. Found
    // from each rank's total in one pass, without sorting the lines: an
    // observation after one change re-renders the whole page's lines.
    let rank = |w: &Written| -> usize {
        if w.in_viewport {
            0
        } else {
            match w.kind {
                Kind::Element => 1,
                Kind::Heading => 2,
                Kind::Text => 3,
            }
        }
    };
    // A marker line may come with it.
    let cost = |w: &Written| w.text.len() + 1 + if w.in_viewport { 0 } else { 8 };
    let limit = cap.saturating_sub(400);
    let mut totals = [0usize; 4];
    for (w, p) in written.iter().zip(&placed) {
        if !p.redundant {
            totals[rank(w)] += cost(w);
        }
    }
    let mut used = 0usize;
    let mut cut_rank = None;
    for (r, &total) in totals.iter().enumerate() {
        if used + total > limit {
            cut_rank = Some(r);
            break;
        }
        used += total;
    }
    // Of the rank that overflows, the lines before this one are kept.
    let mut cut_at = written.len();
    if let Some(r) = cut_rank {
        for (i, (w, p)) in written.iter().zip(&placed).enumerate() {
            if p.redundant || rank(w) != r {
                continue;
            }
            if used + cost(w) > limit {
                cut_at = i;
                break;
            }
            used += cost(w);
        }
    }
    let keep = |i: usize| {
        !placed[i].redundant
            && cut_rank.is_none_or(|c| {
                let r = rank(written[i]);
                r < c || (r == c && i < cut_at)
            })
    };
    let mut out = scroll_line(vp).map(|l| l + "\n").unwrap_or_default();
    // Left-out elements are summarised where they were (say which way to
    // scroll); left-out text only by count, at the end.
    let mut skipped_el = 0usize;
    let mut skipped_text = 0usize;
    let mut run = 0usize;
    let summary = |n: usize| {
        format!(
            "… ({n} more element{} here: scroll to see {})\n",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        )
    };
    let mut screen = 0i64;
    for (i, w) in written.iter().enumerate() {
        if keep(i) {
            if run > 0 {
                out.push_str(&summary(run));
                run = 0;
            }
            if let Some(s) = placed[i].screen.filter(|s| *s != screen) {
                out.push_str(&screen_marker(s));
                out.push('\n');
                screen = s;
            }
            out.push_str(&w.text);
            out.push('\n');
        } else if w.kind == Kind::Element {
            skipped_el += 1;
            run += 1;
        } else if !(placed[i].redundant && w.in_viewport) {
            skipped_text += 1;
        }
    }
    if run > 0 {
        out.push_str(&summary(run));
    }
    if skipped_text > 0 {
        out.push_str(&format!(
            "… ({skipped_text} off-screen text line{} left out)\n",
            if skipped_text == 1 { "" } else { "s" }
        ));
    }
    // The hard cap, whatever the summaries added: cut at a line's end.
    if out.len() > cap {
        let mut cut = cap.saturating_sub(60);
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        let cut = out[..cut].rfind('\n').map_or(0, |i| i + 1);
        out.truncate(cut);
        out.push_str(&format!("… (cut at {cap} bytes; {skipped_el} elements not shown)\n"));
    }
    out
}
