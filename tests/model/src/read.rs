//! Reading a chat request the way a scripted model may: the text of its
//! messages and the elements its observation lists (a script finds
//! elements only through what the observation text says).

use anyhow::{Result, anyhow};
use serde_json::Value;
#[cfg(test)]
use serde_json::json;

/// The text of a message's `content`: a string, or the `text` parts of an
/// array of parts.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of the last `user` message of a chat request.
pub fn last_user_message(req: &Value) -> Option<String> {
    req["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| content_text(&m["content"]))
}

/// The text of every message of a chat request, joined.
pub fn all_text(req: &Value) -> String {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| content_text(&m["content"]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The elements of an element list: a line `12<button>Submit` (`*12<…>`
/// when new), or every `[N]…` with the rest of its line (the older shape,
/// and other agents'), e.g. `(12, "<button>Submit")`.
pub fn elements(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let bare = line.trim_start();
        let bare = bare.strip_prefix('*').unwrap_or(bare);
        let digits = bare.len() - bare.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        // `12<button>…`, or a plain link without its kind: `8>Pricing`.
        if digits > 0 && bare[digits..].starts_with(['<', '>']) {
            if let Ok(n) = bare[..digits].parse() {
                out.push((n, bare[digits..].trim().to_owned()));
                continue;
            }
        }
        let mut rest = line;
        while let Some(open) = rest.find('[') {
            let after = &rest[open + 1..];
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits > 0 && after[digits..].starts_with(']') {
                if let Ok(n) = after[..digits].parse() {
                    let tail = &after[digits + 1..];
                    // Up to the next `[N]` on the same line, if any.
                    let end = next_marker(tail).unwrap_or(tail.len());
                    out.push((n, tail[..end].trim().to_owned()));
                    rest = &tail[end..];
                    continue;
                }
            }
            rest = after;
        }
    }
    out
}

fn next_marker(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find('[') {
        let at = from + i;
        let after = &s[at + 1..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && after[digits..].starts_with(']') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// An element's visible text: its description without `<…>` tags and
/// quotes, whitespace collapsed, lower-case; for an element without text
/// (a field), its name: written against the kind (`5<email="E-mail">`,
/// `6<input=Name>`) or, in the older shape, quoted in its tag
/// (`[5]<email "E-mail">`).
fn visible(desc: &str) -> String {
    // A plain link is written without its kind: `8>Pricing`.
    let desc = desc.strip_prefix('>').unwrap_or(desc);
    let mut out = String::new();
    let mut name = tag_name(desc).unwrap_or_default();
    let mut in_tag = false;
    let mut in_name = false;
    let mut prev = ' ';
    for c in desc.chars() {
        match c {
            '"' if in_tag && (in_name || prev == ' ') => in_name = !in_name,
            _ if in_name => name.push(c),
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            '"' | '\'' => out.push(' '),
            _ => out.push(c),
        }
        prev = c;
    }
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let text = norm(&out);
    if text.is_empty() { norm(&name) } else { text }
}

/// The name written against an element's kind: `Close` in `<button=Close>`,
/// `Keep me signed in` in `<checkbox="Keep me signed in" checked>`.
pub fn tag_name(desc: &str) -> Option<String> {
    let rest = desc.strip_prefix('<')?;
    let kind_end = rest.find(|c: char| c.is_whitespace() || matches!(c, '>' | '='))?;
    let after = rest[kind_end..].strip_prefix('=')?;
    let name = match after.strip_prefix('"') {
        Some(quoted) => &quoted[..quoted.find('"')?],
        None => {
            &after[..after.find(|c: char| c.is_whitespace() || c == '>').unwrap_or(after.len())]
        }
    };
    Some(name.to_owned())
}

/// The number of the element whose text is `label` in an element list:
/// an exact match of its visible text first (`[7]<button>Submit</button>`),
/// else the one element whose description mentions `label`.
pub fn element_index(text: &str, label: &str) -> Option<u32> {
    let want = label.trim().to_lowercase();
    let els = elements(text);
    if let Some((n, _)) = els.iter().find(|(_, d)| visible(d) == want) {
        return Some(*n);
    }
    let mentions: Vec<u32> = els
        .iter()
        .filter(|(_, d)| {
            visible(d).split(|c: char| !c.is_alphanumeric()).any(|w| w == want)
                || d.to_lowercase().contains(&want)
        })
        .map(|(n, _)| *n)
        .collect();
    match mentions.as_slice() {
        [n] => Some(*n),
        _ => None,
    }
}

/// [`element_index`] in the last user message of `req`, with an error that
/// quotes the message.
pub fn find_element(req: &Value, label: &str) -> Result<u32> {
    let text =
        last_user_message(req).ok_or_else(|| anyhow!("the request has no user message: {req}"))?;
    element_index(&text, label).ok_or_else(|| {
        anyhow!(
            "no element {label:?} in the request's element list; the last user message was:\n{text}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_elements_by_their_text() {
        let text = "Page: Contact\n[1]<a>Help</a>\n[2]<input type=text placeholder=\"Ada\" />\n\
                    [3]<button>Cancel</button>\n\t[14]<button>Submit</button>\nsome text\n\
                    [15]<email \"E-mail\" value=\"a@b.c\">\n[16]<button \"Close dialog\">×\n[17]<a>Details";
        assert_eq!(element_index(text, "Submit"), Some(14));
        assert_eq!(element_index(text, "cancel"), Some(3));
        assert_eq!(element_index(text, "Help"), Some(1));
        assert_eq!(element_index(text, "Nothing"), None);
        // The compact shape: a field by the name quoted in its tag.
        assert_eq!(element_index(text, "E-mail"), Some(15));
        assert_eq!(element_index(text, "Close dialog"), Some(16));
        assert_eq!(element_index(text, "details"), Some(17));
        let inline = "[1]<a>Home</a> [2]<button>Submit form</button>";
        assert_eq!(elements(inline).len(), 2);
        assert_eq!(element_index(inline, "Submit"), Some(2));
        assert_eq!(element_index("array[0] = 1; [5] button \"Submit\"", "Submit"), Some(5));
        // Errand's shape: the number at the start of the line.
        let bare = "# Sign in\n3<email value=\"a@b.c\">\n*4<button>Log in\n\"5<a>Fake\"\n12 apples";
        assert_eq!(
            elements(bare),
            vec![(3, "<email value=\"a@b.c\">".to_owned()), (4, "<button>Log in".to_owned())]
        );
        assert_eq!(element_index(bare, "log in"), Some(4));
        // Names written against the kind, and a plain link without its kind.
        let named = "3<input=Name>\n4<checkbox=\"Keep me signed in\" checked>\n5>Pricing\n\
                     6<email value=\"x@y.z\">";
        assert_eq!(element_index(named, "name"), Some(3));
        assert_eq!(element_index(named, "Keep me signed in"), Some(4));
        assert_eq!(element_index(named, "pricing"), Some(5));
        assert_eq!(tag_name("<checkbox=\"Keep me\" checked>").as_deref(), Some("Keep me"));
        assert_eq!(tag_name("<input=Name required>").as_deref(), Some("Name"));
        assert_eq!(tag_name("<email value=\"a\">"), None);
    }

    #[test]
    fn reads_messages_in_both_shapes() {
        let req = json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "old"},
            {"role": "assistant", "content": "{}"},
            {"role": "user", "content": [{"type": "text", "text": "[4]<button>Submit</button>"},
                                          {"type": "image_url", "image_url": {"url": "data:"}}]},
        ]});
        assert_eq!(last_user_message(&req).unwrap(), "[4]<button>Submit</button>");
        assert_eq!(find_element(&req, "Submit").unwrap(), 4);
        assert!(all_text(&req).starts_with("sys\nold"));
    }
}
