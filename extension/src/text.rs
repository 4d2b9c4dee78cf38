//! The compact, model-facing page text, built from what the walk saw.
//!
//! Pure functions only: the DOM walk (`observe.rs`) fills [`Seen`] records
//! and [`render`] turns them into lines such as
//! `[12]<button>Submit</button>` or `[3]<input type=email placeholder="E-mail">`.
//! Everything here runs (and is tested) natively.

use errand_protocol::{ElementInfo, Rect};

/// Longest visible text kept for one element.
pub const TEXT_MAX: usize = 80;
/// Longest attribute value kept in a line.
const ATTR_MAX: usize = 60;
/// Longest `href` kept in a line.
const HREF_MAX: usize = 80;
/// How many `<select>` options are spelled out.
const OPTIONS_SHOWN: usize = 8;

/// One interactive element as the walk saw it.
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// Current value of a form field; `None` for passwords.
    pub value: Option<String>,
    /// The label a person reads for a field (from `<label>` or `aria-labelledby`).
    pub label: Option<String>,
    pub checked: bool,
    pub disabled: bool,
    pub required: bool,
    /// Visible text inside the element (not inside nested listed elements).
    pub text: String,
    /// For `<select>`: the option texts (at most a few) and how many there are.
    pub options: Vec<String>,
    pub option_count: usize,
    /// Where it is, in the top viewport's CSS pixels.
    pub rect: Rect,
    pub in_viewport: bool,
}

/// One line of the page text, in document order.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A numbered, interactive element.
    Element(Box<Seen>),
    /// An `h1`–`h3` heading, unnumbered, for context.
    Heading { level: u8, text: String },
}

/// Collapses runs of whitespace to one space and trims the ends.
pub fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(256));
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
    let mut out = format!("[{}]<{}", seen.index, seen.tag);
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
    if let Some(href) = &seen.href {
        push_attr(&mut out, "href", href, HREF_MAX, true);
    }
    if let Some(v) = seen.value.as_ref().filter(|v| !v.is_empty()) {
        push_attr(&mut out, "value", v, ATTR_MAX, true);
    }
    for (flag, word) in [
        (seen.checked, "checked"),
        (seen.disabled, "disabled"),
        (seen.required, "required"),
    ] {
        if flag {
            out.push(' ');
            out.push_str(word);
        }
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

/// The whole page text: `Page:` and `URL:` lines, then one line per
/// heading or element.
pub fn render(title: &str, url: &str, lines: &[Line], vw: f64, vh: f64) -> String {
    let mut out = format!("Page: {}\nURL: {}\n", truncate(&collapse(title), 200), url);
    for line in lines {
        match line {
            Line::Heading { level, text } => {
                let text = truncate(&collapse(text), TEXT_MAX);
                if !text.is_empty() {
                    out.push_str(&"#".repeat(usize::from(*level)));
                    out.push(' ');
                    out.push_str(&text);
                    out.push('\n');
                }
            }
            Line::Element(seen) => {
                out.push_str(&element_line(seen));
                if let Some(hint) = position_hint(&seen.rect, seen.in_viewport, vw, vh) {
                    out.push(' ');
                    out.push_str(&hint);
                }
                out.push('\n');
            }
        }
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
        assert_eq!(element_line(&a), r#"[7]<a href="/next">Next page</a>"#);

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
            r#"[1]<input label="Your 'name'" disabled>"#
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

    #[test]
    fn renders_headings_and_hints() {
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
            },
            Line::Heading {
                level: 2,
                text: "   ".into(),
            },
            Line::Element(Box::new(a)),
        ];
        assert_eq!(
            render("T", "https://x/", &lines, 800.0, 600.0),
            "Page: T\nURL: https://x/\n# Welcome\n[2]<a>More</a> (below, 1200px)\n"
        );
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
