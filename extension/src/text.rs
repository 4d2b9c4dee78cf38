//! The compact, model-facing page text, built from what the walk saw.
//!
//! Pure functions only: the DOM walk (`observe.rs`) fills [`Seen`] records
//! and [`render`] turns them into lines such as
//! `[12]<button>Submit</button>` or `[3]<input type=email placeholder="E-mail">`.
//! Everything here runs (and is tested) natively.

use errand_protocol::{ElementInfo, Rect, Viewport};

/// Longest visible text kept for one element.
pub const TEXT_MAX: usize = 80;
/// Longest attribute value kept in a line.
const ATTR_MAX: usize = 60;
/// Longest `href` kept in a line.
const HREF_MAX: usize = 40;
/// How many `<select>` options are spelled out.
const OPTIONS_SHOWN: usize = 8;

/// One interactive element as the walk saw it.
// Serde: a cross-origin frame's content script sends its lines to its
// parent's (`frames.rs`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Seen {
    pub index: u32,
    /// Lower-case tag name.
    pub tag: String,
    /// The `role` attribute's first token.
    pub role: Option<String>,
    /// For inputs: the `type` (lower case; `text` when absent).
    pub input_type: Option<String>,
    pub name: Option<String>,
    pub placeholder: Option<String>,
    pub aria_label: Option<String>,
    pub title: Option<String>,
    /// The raw `href` attribute of a link.
    pub href: Option<String>,
    /// Where activating it navigates (resolved link or form address).
    pub target: Option<String>,
    /// Current value of a form field; `None` for passwords.
    pub value: Option<String>,
    /// The label a person reads for a field (from `<label>` or `aria-labelledby`).
    pub label: Option<String>,
    pub checked: bool,
    /// `aria-selected="true"` (tabs, options, grid cells).
    pub selected: bool,
    /// `aria-expanded`, or an open/closed `<details>` for its `<summary>`.
    pub expanded: Option<bool>,
    /// `aria-invalid="true"`, or a field the browser found invalid.
    pub invalid: bool,
    pub disabled: bool,
    pub required: bool,
    /// Listed for the first time in this observation (not the first one).
    pub is_new: bool,
    /// For a scrollable region: how far it is scrolled and how much more there is.
    pub scroll: Option<ScrollInfo>,
    /// Visible text inside the element (not inside nested listed elements).
    pub text: String,
    /// For `<select>`: the option texts (at most a few) and how many there are.
    pub options: Vec<String>,
    pub option_count: usize,
    /// Where it is, in the top viewport's CSS pixels.
    pub rect: Rect,
    pub in_viewport: bool,
}

/// How far a scrollable region is scrolled, in CSS pixels.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScrollInfo {
    pub above: f64,
    pub below: f64,
}

/// One line of the page text, in document order.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Line {
    /// A numbered, interactive element (unnumbered when disabled).
    Element(Box<Seen>),
    /// An `h1`–`h6` heading, unnumbered, for context.
    Heading {
        level: u8,
        text: String,
        in_viewport: bool,
    },
    /// Text a person reads around the controls (paragraphs, labels,
    /// messages), unnumbered.
    Text { text: String, in_viewport: bool },
}

/// Longest text line kept verbatim in the viewport.
pub const TEXT_LINE_MAX: usize = 300;
/// Longest text line kept outside the viewport.
pub const OFFSCREEN_TEXT_MAX: usize = 80;
/// The hard cap on the whole page text, in bytes.
pub const TEXT_CAP: usize = 40_000;

/// Collapses runs of whitespace to one space and trims the ends.
pub fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(256));
    // Invisible bidi and zero-width marks cost tokens and say nothing.
    let invisible = |c: char| {
        matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    let cleaned;
    let text = if text.chars().any(invisible) {
        cleaned = text.chars().filter(|c| !invisible(*c)).collect::<String>();
        cleaned.as_str()
    } else {
        text
    };
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Cuts `text` to at most `max` characters, ending with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some(_) => {
            let cut = text
                .char_indices()
                .nth(max.saturating_sub(1))
                .map_or(text.len(), |(i, _)| i);
            format!("{}…", text[..cut].trim_end())
        }
    }
}

/// The ARIA role a tag has without a `role` attribute (only the roles that
/// matter for telling whether an explicit role says anything new).
pub fn implied_role(tag: &str, input_type: Option<&str>) -> Option<&'static str> {
    Some(match tag {
        "a" => "link",
        "button" | "summary" => "button",
        "select" => "combobox",
        "textarea" => "textbox",
        "option" => "option",
        "input" => match input_type.unwrap_or("text") {
            "checkbox" => "checkbox",
            "radio" => "radio",
            "range" => "slider",
            "number" => "spinbutton",
            "search" => "searchbox",
            "button" | "submit" | "reset" | "image" => "button",
            _ => "textbox",
        },
        _ => return None,
    })
}

/// The text fields whose value is shown (and that `fill` accepts).
pub fn is_text_input(input_type: &str) -> bool {
    !matches!(
        input_type,
        "checkbox" | "radio" | "file" | "submit" | "button" | "reset" | "image" | "hidden"
    )
}

/// `true` when an attribute value can go unquoted (`type=email`).
fn is_token(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Appends ` key=value` or ` key="value"` (cleaned and cut).
fn push_attr(out: &mut String, key: &str, value: &str, max: usize, quote_always: bool) {
    let value = truncate(&collapse(value), max).replace('"', "'");
    out.push(' ');
    out.push_str(key);
    out.push('=');
    if !quote_always && is_token(&value) {
        out.push_str(&value);
    } else {
        out.push('"');
        out.push_str(&value);
        out.push('"');
    }
}

/// Tags written without a closing tag.
fn is_void(tag: &str) -> bool {
    matches!(tag, "input" | "img" | "area")
}

/// Says where an element off the screen is: `(below, 1200px)`.
/// `None` for an element any part of which is in the viewport.
pub fn position_hint(rect: &Rect, in_viewport: bool, vw: f64, vh: f64) -> Option<String> {
    if in_viewport {
        return None;
    }
    let (dir, dist) = if rect.y >= vh {
        ("below", rect.y - vh)
    } else if rect.y + rect.height <= 0.0 {
        ("above", -(rect.y + rect.height))
    } else if rect.x >= vw {
        ("right", rect.x - vw)
    } else if rect.x + rect.width <= 0.0 {
        ("left", -(rect.x + rect.width))
    } else {
        // Inside the window's box yet not in view: clipped by a frame.
        return Some("(hidden by scrolling)".to_owned());
    };
    Some(format!("({dir}, {}px)", dist.round().max(0.0) as i64))
}

/// The `href` as shown: without the page's own origin, never `javascript:`.
pub fn shown_href(href: &str, page_origin: &str) -> Option<String> {
    let href = href.trim();
    if href.is_empty() || href == "#" || href.to_ascii_lowercase().starts_with("javascript:") {
        return None;
    }
    let short = match href.strip_prefix(page_origin) {
        Some(rest) if !page_origin.is_empty() && (rest.is_empty() || rest.starts_with('/')) => {
            if rest.is_empty() {
                "/"
            } else {
                rest
            }
        }
        _ => href,
    };
    Some(short.to_owned())
}

/// The one line for an element, without the position hint.
pub fn element_line(seen: &Seen) -> String {
    let mut out = if seen.disabled || seen.index == 0 {
        // Reported, not offered: no number to act on.
        format!("<{}", seen.tag)
    } else if seen.is_new {
        format!("*[{}]<{}", seen.index, seen.tag)
    } else {
        format!("[{}]<{}", seen.index, seen.tag)
    };
    let implied = implied_role(&seen.tag, seen.input_type.as_deref());
    if let Some(role) = seen.role.as_ref().filter(|r| Some(r.as_str()) != implied) {
        push_attr(&mut out, "role", role, ATTR_MAX, false);
    }
    if let Some(t) = seen
        .input_type
        .as_ref()
        .filter(|t| seen.tag == "input" && *t != "text")
    {
        push_attr(&mut out, "type", t, ATTR_MAX, false);
    }
    if let Some(name) = &seen.name {
        push_attr(&mut out, "name", name, ATTR_MAX, false);
    }
    if let Some(p) = &seen.placeholder {
        push_attr(&mut out, "placeholder", p, ATTR_MAX, true);
    }
    if let Some(l) = &seen.aria_label {
        push_attr(&mut out, "aria-label", l, ATTR_MAX, true);
    }
    let text = collapse(&seen.text);
    let labelled = seen.aria_label.is_some() || seen.placeholder.is_some();
    if text.is_empty() && !labelled {
        if let Some(label) = &seen.label {
            push_attr(&mut out, "label", label, ATTR_MAX, true);
        } else if let Some(title) = &seen.title {
            push_attr(&mut out, "title", title, ATTR_MAX, true);
        }
    }
    // A link is named by its text; its address only when it has no name.
    let named = !text.is_empty() || labelled || seen.title.is_some();
    if let Some(href) = seen.href.as_ref().filter(|_| !named) {
        push_attr(&mut out, "href", href, HREF_MAX, true);
    }
    if let Some(v) = seen.value.as_ref().filter(|v| !v.is_empty()) {
        push_attr(&mut out, "value", v, ATTR_MAX, true);
    }
    if let Some(e) = seen.expanded {
        out.push_str(if e { " expanded" } else { " collapsed" });
    }
    for (flag, word) in [
        (seen.checked, "checked"),
        (seen.selected, "selected"),
        (seen.disabled, "disabled"),
        (seen.required, "required"),
        (seen.invalid, "invalid"),
    ] {
        if flag {
            out.push(' ');
            out.push_str(word);
        }
    }
    if let Some(sc) = seen.scroll {
        out.push_str(&format!(
            " scroll=\"{}px above, {}px below\"",
            sc.above.round().max(0.0) as i64,
            sc.below.round().max(0.0) as i64
        ));
    }
    out.push('>');
    if is_void(&seen.tag) {
        return out;
    }
    if seen.tag == "select" {
        out.push_str(&seen.options.join("|"));
        if seen.option_count > seen.options.len() {
            out.push_str("|…");
        }
        out.push_str(&format!(
            " ({} option{})",
            seen.option_count,
            if seen.option_count == 1 { "" } else { "s" }
        ));
    } else {
        out.push_str(&truncate(&text, TEXT_MAX));
    }
    out.push_str("</");
    out.push_str(&seen.tag);
    out.push('>');
    out
}

/// The line above the list: where the window is scrolled to.
pub fn scroll_line(vp: &Viewport) -> String {
    let below = (vp.page_height - vp.scroll_y - vp.height).round().max(0.0) as i64;
    let above = vp.scroll_y.round().max(0.0) as i64;
    let mut out = format!("Viewport {}x{}, scrolled {above}px from the top, {below}px more below", vp.width.round() as i64, vp.height.round() as i64);
    let right = (vp.page_width - vp.scroll_x - vp.width).round() as i64;
    if vp.scroll_x > 0.0 || right > 0 {
        out.push_str(&format!(", {}px left, {right}px right", vp.scroll_x.round() as i64));
    }
    out
}

/// One line as written, and whether it is in the viewport.
fn line_text(line: &Line, vp: &Viewport) -> Option<(String, bool, bool)> {
    match line {
        Line::Heading { level, text, in_viewport } => {
            let text = truncate(&collapse(text), TEXT_MAX);
            (!text.is_empty()).then(|| {
                (format!("{} {text}", "#".repeat(usize::from(*level))), *in_viewport, false)
            })
        }
        Line::Text { text, in_viewport } => {
            let max = if *in_viewport { TEXT_LINE_MAX } else { OFFSCREEN_TEXT_MAX };
            let text = truncate(&collapse(text), max);
            (!text.is_empty()).then_some((text, *in_viewport, false))
        }
        Line::Element(seen) => {
            let mut out = element_line(seen);
            if let Some(hint) = position_hint(&seen.rect, seen.in_viewport, vp.width, vp.height) {
                out.push(' ');
                out.push_str(&hint);
            }
            Some((out, seen.in_viewport, true))
        }
    }
}

/// The whole page text: a scroll line, then one line per heading, text or
/// element, in document order, within `cap` bytes. Everything in the
/// viewport comes first; then the elements outside it, then its headings,
/// then its text (cut short); what does not fit is summarised in place.
pub fn render(lines: &[Line], vp: &Viewport, cap: usize) -> String {
    let written: Vec<(String, bool, bool)> =
        lines.iter().filter_map(|l| line_text(l, vp)).collect();
    let mut keep = vec![false; written.len()];
    let mut used = 0usize;
    // Priorities: in view; elements out of view; headings; other text.
    let rank = |(i, (_, inv, el)): (usize, &(String, bool, bool))| {
        let heading = matches!(written[i].0.as_bytes().first(), Some(b'#'));
        let r = if *inv {
            0
        } else if *el {
            1
        } else if heading {
            2
        } else {
            3
        };
        (r, i)
    };
    let mut order: Vec<(u8, usize)> = written.iter().enumerate().map(rank).collect();
    order.sort_unstable();
    let mut full = false;
    for (_, i) in order {
        let len = written[i].0.len() + 1;
        if !full && used + len <= cap.saturating_sub(400) {
            keep[i] = true;
            used += len;
        } else {
            full = true;
        }
    }
    let mut out = scroll_line(vp);
    out.push('\n');
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
    for (i, (text, _, el)) in written.iter().enumerate() {
        if keep[i] {
            if run > 0 {
                out.push_str(&summary(run));
                run = 0;
            }
            out.push_str(text);
            out.push('\n');
        } else if *el {
            skipped_el += 1;
            run += 1;
        } else {
            skipped_text += 1;
        }
    }
    if run > 0 {
        out.push_str(&summary(run));
    }
    if skipped_text > 0 {
        out.push_str(&format!(
            "… ({skipped_text} line{} of text outside the viewport left out)\n",
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

/// Keeps the first few option texts of a `<select>`.
pub fn options_shown(all: impl Iterator<Item = String>) -> Vec<String> {
    all.take(OPTIONS_SHOWN)
        .map(|o| truncate(&collapse(&o), 30))
        .collect()
}

/// The protocol's record of an element.
pub fn info(seen: &Seen) -> ElementInfo {
    let text = collapse(&seen.text);
    let name = [&seen.aria_label, &seen.label]
        .into_iter()
        .flatten()
        .map(|s| collapse(s))
        .find(|s| !s.is_empty())
        .or_else(|| (!text.is_empty()).then_some(text))
        // A button made of an input shows its value.
        .or_else(|| {
            matches!(seen.input_type.as_deref(), Some("submit" | "button" | "reset"))
                .then(|| seen.value.as_deref().map(collapse))
                .flatten()
                .filter(|v| !v.is_empty())
        })
        .or_else(|| seen.placeholder.clone())
        .or_else(|| seen.title.clone())
        .unwrap_or_default();
    let implied = implied_role(&seen.tag, seen.input_type.as_deref());
    ElementInfo {
        index: seen.index,
        tag: seen.tag.clone(),
        role: seen.role.clone().filter(|r| Some(r.as_str()) != implied),
        name: truncate(&name, TEXT_MAX),
        input_type: seen.input_type.clone(),
        value: seen.value.clone(),
        rect: seen.rect,
        in_viewport: seen.in_viewport,
        disabled: seen.disabled,
        target: seen.target.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(tag: &str) -> Seen {
        Seen {
            index: 1,
            tag: tag.into(),
            in_viewport: true,
            ..Default::default()
        }
    }

    #[test]
    fn writes_the_brief_examples() {
        let mut b = seen("button");
        b.index = 12;
        b.text = "  Submit\n ".into();
        assert_eq!(element_line(&b), "[12]<button>Submit</button>");

        let mut i = seen("input");
        i.index = 3;
        i.input_type = Some("email".into());
        i.placeholder = Some("E-mail".into());
        i.value = Some("a@b.c".into());
        assert_eq!(
            element_line(&i),
            r#"[3]<input type=email placeholder="E-mail" value="a@b.c">"#
        );

        let mut a = seen("a");
        a.index = 7;
        a.href = Some("/next".into());
        a.text = "Next page".into();
        assert_eq!(element_line(&a), "[7]<a>Next page</a>");
        a.text = String::new();
        assert_eq!(element_line(&a), r#"[7]<a href="/next"></a>"#);

        let mut s = seen("select");
        s.index = 9;
        s.name = Some("size".into());
        s.options = options_shown(["S", "M", "L"].into_iter().map(String::from));
        s.option_count = 3;
        assert_eq!(
            element_line(&s),
            "[9]<select name=size>S|M|L (3 options)</select>"
        );
    }

    #[test]
    fn shows_role_only_when_it_says_more() {
        let mut d = seen("div");
        d.role = Some("button".into());
        d.text = "Open".into();
        assert_eq!(element_line(&d), "[1]<div role=button>Open</div>");
        let mut b = seen("button");
        b.role = Some("button".into());
        assert_eq!(element_line(&b), "[1]<button></button>");
        let mut c = seen("input");
        c.input_type = Some("checkbox".into());
        c.role = Some("switch".into());
        c.checked = true;
        c.required = true;
        assert_eq!(
            element_line(&c),
            "[1]<input role=switch type=checkbox checked required>"
        );
    }

    #[test]
    fn labels_empty_elements() {
        let mut b = seen("button");
        b.title = Some("Close".into());
        assert_eq!(element_line(&b), r#"[1]<button title="Close"></button>"#);
        b.aria_label = Some("Close dialog".into());
        assert_eq!(
            element_line(&b),
            r#"[1]<button aria-label="Close dialog"></button>"#
        );
        let mut i = seen("input");
        i.label = Some("Your \"name\"".into());
        i.disabled = true;
        assert_eq!(
            element_line(&i),
            r#"<input label="Your 'name'" disabled>"#
        );
    }

    #[test]
    fn cuts_long_text_and_many_options() {
        let mut b = seen("a");
        b.text = "word ".repeat(40);
        let line = element_line(&b);
        assert!(line.ends_with("…</a>"), "{line}");
        assert!(line.chars().count() < 100, "{line}");
        let mut s = seen("select");
        s.options = options_shown((1..=20).map(|n| n.to_string()));
        s.option_count = 20;
        assert_eq!(
            element_line(&s),
            "[1]<select>1|2|3|4|5|6|7|8|… (20 options)</select>"
        );
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate("héllo", 10), "héllo");
        assert_eq!(truncate("héllo wörld", 5), "héll…");
        assert_eq!(truncate("日本語のテキスト", 4), "日本語…");
        assert_eq!(collapse(" a \n\t b  "), "a b");
        assert_eq!(collapse("Germany \u{202a}(+49)\u{202c}"), "Germany (+49)");
    }

    #[test]
    fn tells_where_offscreen_elements_are() {
        let r = |x, y| Rect {
            x,
            y,
            width: 100.0,
            height: 20.0,
        };
        assert_eq!(position_hint(&r(0.0, 10.0), true, 800.0, 600.0), None);
        assert_eq!(
            position_hint(&r(0.0, 1800.0), false, 800.0, 600.0).as_deref(),
            Some("(below, 1200px)")
        );
        assert_eq!(
            position_hint(&r(0.0, -520.0), false, 800.0, 600.0).as_deref(),
            Some("(above, 500px)")
        );
        assert_eq!(
            position_hint(&r(900.0, 10.0), false, 800.0, 600.0).as_deref(),
            Some("(right, 100px)")
        );
    }

    #[test]
    fn shortens_hrefs() {
        let o = "https://example.com";
        assert_eq!(
            shown_href("https://example.com/a/b", o).as_deref(),
            Some("/a/b")
        );
        assert_eq!(
            shown_href("https://example.community/", o).as_deref(),
            Some("https://example.community/")
        );
        assert_eq!(shown_href("javascript:void(0)", o), None);
        assert_eq!(shown_href("#", o), None);
        assert_eq!(shown_href("#top", o).as_deref(), Some("#top"));
    }

    fn vp() -> Viewport {
        Viewport {
            width: 800.0,
            height: 600.0,
            scroll_x: 0.0,
            scroll_y: 100.0,
            page_width: 800.0,
            page_height: 3000.0,
        }
    }

    #[test]
    fn renders_headings_text_and_hints() {
        let mut a = seen("a");
        a.index = 2;
        a.text = "More".into();
        a.in_viewport = false;
        a.rect = Rect {
            x: 0.0,
            y: 1800.0,
            width: 10.0,
            height: 10.0,
        };
        let lines = vec![
            Line::Heading {
                level: 1,
                text: " Welcome ".into(),
                in_viewport: true,
            },
            Line::Heading {
                level: 2,
                text: "   ".into(),
                in_viewport: true,
            },
            Line::Text {
                text: " Thanks,\n submitted! ".into(),
                in_viewport: true,
            },
            Line::Element(Box::new(a)),
        ];
        assert_eq!(
            render(&lines, &vp(), TEXT_CAP),
            "Viewport 800x600, scrolled 100px from the top, 2300px more below\n\
             # Welcome\nThanks, submitted!\n[2]<a>More</a> (below, 1200px)\n"
        );
    }

    #[test]
    fn marks_new_elements_and_does_not_offer_disabled_ones() {
        let mut b = seen("button");
        b.index = 4;
        b.text = "Pay".into();
        b.is_new = true;
        assert_eq!(element_line(&b), "*[4]<button>Pay</button>");
        b.disabled = true;
        assert_eq!(element_line(&b), "<button disabled>Pay</button>");
        let mut t = seen("div");
        t.role = Some("tab".into());
        t.selected = true;
        t.expanded = Some(false);
        t.invalid = true;
        t.scroll = Some(ScrollInfo { above: 0.0, below: 420.4 });
        assert_eq!(
            element_line(&t),
            r#"[1]<div role=tab collapsed selected invalid scroll="0px above, 420px below"></div>"#
        );
    }

    #[test]
    fn budgets_long_pages_keeping_the_viewport() {
        let mut lines = Vec::new();
        for i in 0..2000u32 {
            let mut b = seen("a");
            b.index = i + 1;
            b.text = format!("link number {i} with some words");
            b.in_viewport = i < 10;
            b.rect = Rect {
                x: 0.0,
                y: f64::from(i) * 30.0,
                width: 100.0,
                height: 20.0,
            };
            lines.push(Line::Element(Box::new(b)));
            lines.push(Line::Text {
                text: "words ".repeat(100),
                in_viewport: i < 10,
            });
        }
        let out = render(&lines, &vp(), 20_000);
        assert!(out.len() <= 20_000, "{}", out.len());
        for i in 0..10 {
            assert!(out.contains(&format!("[{}]<a>link number {i} ", i + 1)), "{i}");
        }
        // Text in view is verbatim (up to its line cap), out of view it is cut.
        assert!(out.contains(&"words ".repeat(40)));
        assert!(out.contains("left out"), "{out}");
        // Elements out of view come before text out of view.
        assert!(out.contains("[200]<a>"), "{out}");
    }

    #[test]
    fn names_elements_for_people() {
        let mut i = seen("input");
        i.placeholder = Some("E-mail".into());
        assert_eq!(info(&i).name, "E-mail");
        i.label = Some(" Work  e-mail ".into());
        assert_eq!(info(&i).name, "Work e-mail");
        let mut b = seen("button");
        b.role = Some("button".into());
        b.text = "Go".into();
        assert_eq!(info(&b).role, None);
        assert_eq!(info(&b).name, "Go");
    }
}
