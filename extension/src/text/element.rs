//! One element's line: its kind and name in angle brackets, its
//! attributes and value, where it is (screens away, a position hint) and
//! the address a link shows.

use super::*;

/// `true` when an attribute value can go unquoted (`type=email`).
pub(super) fn is_token(value: &str) -> bool {
    !value.is_empty()
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Appends ` key=value` or ` key="value"` (cleaned and cut).
pub(super) fn push_attr(out: &mut String, key: &str, value: &str, max: usize, quote_always: bool) {
    let value = cut(collapse(value), max).replace('"', "'");
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

/// Appends ` value="…"` as [`push_attr`] writes it (whitespace collapsed,
/// cut at [`ATTR_MAX`] characters: the host's scrubber knows this shape),
/// and when it was cut, how long it is: `extract` reads it whole.
pub(super) fn push_value(out: &mut String, value: &str) {
    push_attr(out, "value", value, ATTR_MAX, true);
    let chars = collapse(value).chars().count();
    if chars > ATTR_MAX {
        out.push_str(&format!(" ({chars} characters; extract reads it whole)"));
    }
}

/// Appends `=name` right after the kind: the element's name, quoted only
/// when it is more than one word (`<button=Close>`, `<checkbox="Keep me
/// signed in">`). Written against the kind, it cannot be taken for a flag
/// (`<input=required>` is named "required"); unquoted it is one o200k token
/// fewer than ` "Close"`, on every named element.
pub(super) fn push_name(out: &mut String, name: &str) {
    let name = truncate(bare_name(name), ATTR_MAX).replace('"', "'");
    let bare = name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '\''));
    out.push('=');
    if bare && !name.is_empty() {
        out.push_str(&name);
    } else {
        out.push('"');
        out.push_str(&name);
        out.push('"');
    }
}

/// A label without the punctuation that ends it (`Username:`, `Keep me
/// signed in.`, `Search...`): a token that says nothing. An abbreviation's
/// dot stays (`U.S.`).
pub(super) fn bare_name(name: &str) -> &str {
    let n = name.trim_end_matches(':').trim_end();
    let sentence = n.contains(' ') || n.ends_with("..");
    let n = if sentence { n.trim_end_matches(['.', '…']).trim_end() } else { n };
    if n.is_empty() { name } else { n }
}

/// ARIA roles written in place of the tag (`<div role=tab>` is `<tab>`):
/// what the element does matters to the model, not which tag does it.
pub(super) fn is_widget_role(role: &str) -> bool {
    matches!(
        role,
        "button"
            | "link"
            | "checkbox"
            | "radio"
            | "tab"
            | "menuitem"
            | "menuitemcheckbox"
            | "menuitemradio"
            | "option"
            | "combobox"
            | "switch"
            | "slider"
            | "spinbutton"
            | "textbox"
            | "searchbox"
            | "listbox"
            | "treeitem"
            | "gridcell"
    )
}

/// The word written as the element's kind: the tag, an input's type
/// (`<email>`, `<checkbox>`; a plain text field stays `<input>`; input
/// buttons are `<button>`), or the widget role of an element that is not a
/// form field. Also says whether an explicit role still needs writing.
pub(super) fn kind_of(seen: &Seen) -> (&str, Option<&str>) {
    let implied = implied_role(&seen.tag, seen.input_type.as_deref());
    let role = seen.role.as_deref().filter(|r| Some(*r) != implied);
    let field = matches!(seen.tag.as_str(), "input" | "select" | "textarea");
    if seen.tag == "input" {
        let kind = match seen.input_type.as_deref().unwrap_or("text") {
            "text" | "" => "input",
            "submit" | "button" | "reset" | "image" => "button",
            other => other,
        };
        return (kind, role);
    }
    match role {
        // `<link>` is another thing in HTML.
        Some("link") if !field => ("a", None),
        // A contenteditable box is an editor whatever its tag (a role
        // such as `textbox` says no more).
        Some("textbox") | None if seen.editor && !field => ("editor", None),
        Some(r) if seen.editor && !field && !is_widget_role(r) => ("editor", Some(r)),
        Some(r) if !field && is_widget_role(r) => (r, None),
        _ => (seen.tag.as_str(), role),
    }
}

/// Lower-case letters and digits only: for telling whether one text repeats another.
pub(super) fn key(text: &str) -> String {
    // By bytes in the JS build (the same letters and digits, lower-cased):
    // a char loop is slow in wasm2js's JavaScript.
    #[cfg(any(errand_js, test))]
    if text.is_ascii() {
        return text
            .bytes()
            .filter(u8::is_ascii_alphanumeric)
            .map(|b| char::from(b.to_ascii_lowercase()))
            .collect();
    }
    lower(&text.chars().filter(|c| c.is_alphanumeric()).collect::<String>())
}

/// Whether two texts share a word of four letters or more.
pub(super) fn shares_a_word(a: &str, b: &str) -> bool {
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4)
            .map(lower)
            .collect()
    };
    let a = words(a);
    words(b).iter().any(|w| a.contains(w))
}

/// The one line for an element, without where it is: `12<button>Submit`,
/// `3<input="Work e-mail" value="a@b.c" required>`, `5<button=Close>×`,
/// `*4>New` (a link with nothing but its text).
// The number without brackets: `12<a` is two o200k tokens where `[12]<a`
// is four, on every line of the page (a third of a short link's line).
pub fn element_line(seen: &Seen) -> String {
    let (kind, role) = kind_of(seen);
    // Everything between the kind and `>`: its name, attributes and state.
    let mut out = String::new();
    if let Some(role) = role {
        push_attr(&mut out, "role", role, ATTR_MAX, false);
    }
    if let Some(icon) = &seen.icon {
        push_attr(&mut out, "icon", icon, ATTR_MAX, false);
    }
    let input_button = kind == "button" && seen.tag == "input";
    // What a person reads on it: its text; an input button shows its value.
    let text = if input_button {
        seen.value.as_deref().map(collapse).unwrap_or_default()
    } else {
        collapse(&seen.text)
    };
    let clean = |v: &Option<String>| v.as_deref().map(collapse).filter(|v| !v.is_empty());
    let (aria, label, title, placeholder) =
        (clean(&seen.aria_label), clean(&seen.label), clean(&seen.title), clean(&seen.placeholder));
    // Its name, quoted, when the text does not say it already: the label
    // (aria-label, `<label>`), else the placeholder; the title (a tooltip)
    // only for what has no other name.
    let name = aria.or(label);
    let text_key = key(&text);
    let says = |n: &str| !text_key.is_empty() && text_key.contains(&key(n));
    // A text of symbols only (a `⠿` drag handle, a `×`) names nothing.
    let wordless = !text.chars().any(char::is_alphanumeric);
    let any_name =
        name.as_deref().or(placeholder.as_deref()).or(title.as_deref().filter(|_| wordless));
    // A name that only says the kind (`<email "E-mail">`) says nothing new.
    let shown_name = any_name.filter(|n| !says(n) && key(n) != kind);
    let mut name_part = String::new();
    if let Some(n) = shown_name {
        push_name(&mut name_part, n);
    }
    // A placeholder beside a label is a hint of its own (`DD`, `YYYY`),
    // unless it says the label again in other words ("Enter your email").
    if let (Some(n), Some(p)) = (&name, &placeholder) {
        if !key(n).contains(&key(p)) && !shares_a_word(n, p) && !says(p) {
            push_attr(&mut out, "placeholder", p, ATTR_MAX, true);
        }
    }
    let named = any_name.is_some() || !text.is_empty();
    // The `name` attribute and the address only for what has no name.
    if !named {
        if let Some(n) = clean(&seen.name) {
            push_attr(&mut out, "name", &n, ATTR_MAX, false);
        }
        if let Some(href) = &seen.href {
            push_attr(&mut out, "href", href, HREF_MAX, true);
        }
    }
    if let Some(v) = seen.value.as_ref().filter(|v| !v.is_empty() && !input_button) {
        push_value(&mut out, v);
    }
    if let Some(e) = seen.expanded {
        out.push_str(if e { " expanded" } else { " collapsed" });
    }
    for (flag, word) in [
        (seen.checked, "checked"),
        (seen.selected, "selected"),
        (seen.disabled, "disabled"),
        (seen.readonly, "readonly"),
        (seen.multiple, "multiple"),
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
    // Reported, not offered: no number to act on.
    let offered = !seen.disabled && seen.index > 0;
    let number = match (offered, seen.is_new) {
        (false, _) => String::new(),
        (true, true) => format!("*{}", seen.index),
        (true, false) => seen.index.to_string(),
    };
    out = if offered && kind == "a" && name_part.is_empty() && out.is_empty() {
        // A plain link, the commonest line of a page, without its kind:
        // `8>Pricing` is `8<a>Pricing` one o200k token shorter.
        format!("{number}>")
    } else {
        format!("{number}<{kind}{name_part}{out}>")
    };
    if seen.tag == "select" && !seen.disabled {
        // A disabled select's options cannot be chosen: its value says enough.
        out.push_str(&seen.options.join("|"));
        if seen.option_count > seen.options.len() {
            out.push_str(&format!("|… ({} options)", seen.option_count));
        }
    } else if !is_void(&seen.tag) || input_button {
        out.push_str(&cut(text, TEXT_MAX));
    }
    out
}

/// Tags whose text is not shown (their name is written in the tag).
pub(super) fn is_void(tag: &str) -> bool {
    matches!(tag, "input" | "img" | "area" | "textarea")
}

/// Which screen an element is on, counted from the viewport: `0` in view,
/// `n > 0` when scrolling down `n` screens shows it, `-n` when scrolling up
/// `n` screens does. `None` beside the viewport (left, right, or clipped by
/// a scrolled box), where a line of its own says so.
pub fn screen_of(rect: &Rect, in_viewport: bool, vh: f64) -> Option<i64> {
    if in_viewport {
        return Some(0);
    }
    let vh = vh.max(1.0);
    if rect.y >= vh {
        Some((rect.y / vh).floor() as i64)
    } else if rect.y + rect.height <= 0.0 {
        Some(-((-rect.y / vh).ceil().max(1.0) as i64))
    } else {
        None
    }
}

/// Says where an element beside the viewport is: `(right, 1200px)`, or
/// `(hidden by scrolling)` inside a scrolled box. `None` for elements in
/// view, above or below it (a marker line before them says how far).
pub fn position_hint(rect: &Rect, in_viewport: bool, vw: f64, vh: f64) -> Option<String> {
    if screen_of(rect, in_viewport, vh).is_some() {
        return None;
    }
    let (dir, dist) = if rect.x >= vw {
        ("right", rect.x - vw)
    } else if rect.x + rect.width <= 0.0 {
        ("left", -(rect.x + rect.width))
    } else {
        // Inside the window's box yet not in view: clipped by a frame.
        return Some("(hidden by scrolling)".to_owned());
    };
    Some(format!("({dir}, {}px)", dist.round().max(0.0) as i64))
}

/// The line that starts a run of elements on another screen:
/// `--- 2 screens below ---`, `--- in view ---`.
pub(super) fn screen_marker(screen: i64) -> String {
    let n = screen.unsigned_abs();
    let s = if n == 1 { "" } else { "s" };
    match screen {
        0 => "--- in view ---".to_owned(),
        1.. => format!("--- {n} screen{s} below ---"),
        _ => format!("--- {n} screen{s} above ---"),
    }
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
