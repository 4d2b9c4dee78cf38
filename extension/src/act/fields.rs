//! The field family: fill (through the native value setter, read back),
//! type, check and uncheck, press, and what leaving a field does to it.
//!
//! Fill and type read the value back: what the field holds must keep
//! what was filled or typed (type: every character in order, case and
//! spacing aside, so a mask's own characters are fine), else the action
//! fails saying what the page holds — for a secret field only how many
//! characters ([`is_secret`]: `marks::is_secret_field`). A `maxlength`
//! that kept characters out fails saying so (the field keeps what fits).
//! A field the page emptied as it took the value ([`took`]: on Enter, or
//! the value now shows in an element that appeared, such as a new to-do
//! item) is a success that says so.

use super::*;

/// Ticks or unticks a checkbox, radio button, or ARIA checkbox/switch, by
/// clicking it when it is not already so; reads the state back.
pub(super) async fn check(index: u32, on: bool, watch: &Watch) -> Result<String, Fail> {
    let el = usable(index)?;
    let who = describe(index, &el);
    let state = |el: &Element| -> Option<bool> {
        if proto::local_name(&el) == "input" {
            let i = el.unchecked_ref::<HtmlInputElement>();
            if matches!(i.type_().as_str(), "checkbox" | "radio") {
                return Some(i.checked());
            }
            return None;
        }
        match proto::get_attribute(&el, "aria-checked").as_deref() {
            Some("true") => Some(true),
            Some("false") | Some("mixed") => Some(false),
            _ => proto::query_selector(&el, "input[type=checkbox], input[type=radio]")
                .ok()
                .flatten()
                .map(|i| i.unchecked_ref::<HtmlInputElement>().checked()),
        }
    };
    // A styled radio's or checkbox's `<label>` (listed for its hidden
    // input) is checked through its control: its state is the control's.
    let label_for = (proto::local_name(&el) == "label")
        .then(|| el.unchecked_ref::<web_sys::HtmlLabelElement>().control())
        .flatten()
        .map(|c| c.unchecked_into::<Element>());
    let probe = label_for.unwrap_or_else(|| el.clone());
    let Some(now) = state(&probe) else {
        return Err(failed(&format!("{who} is not a checkbox or radio button")));
    };
    if now == on {
        return Ok(format!("{who} was already {}", if on { "checked" } else { "unchecked" }));
    }
    if !on && proto::get_attribute(&probe, "type").as_deref() == Some("radio") {
        return Err(failed(&format!(
            "{who} is a radio button: choose another option of its group instead"
        )));
    }
    click(index, ClickButton::Left, &[], 1, watch).await?;
    watch.settle().await;
    match state(&probe) {
        Some(s) if s == on => Ok(format!("{} {who}", if on { "checked" } else { "unchecked" })),
        _ => Err(failed(&format!(
            "{who} is still {} after clicking it",
            if on { "unchecked" } else { "checked" }
        ))),
    }
}

/// Presses a key combination on element `index` or the focused element.
pub(super) fn press(key: &str, index: Option<u32>) -> Result<String, Fail> {
    let el = match index {
        Some(i) => Some(usable(i)?),
        None => None,
    };
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    let combo = keys::parse(key, is_mac(&window)).map_err(|e| failed(&e))?;
    if let Some(el) = &el {
        if dom::is_focusable(el) {
            focus::focus(el);
        }
    }
    let target = keys::key_target(el.as_ref()).ok_or_else(|| failed("nothing has the focus"))?;
    let on = match index {
        Some(i) => describe(i, &target),
        None => format!("<{}>", proto::local_name(&target)),
    };
    let did = keys::press(&target, &combo);
    // A copy with nothing selected, a paste with nothing copied: the
    // model is told the key did not do what it is for.
    if let Some(d) = did.as_deref().filter(|d| d.starts_with("nothing was ")) {
        return Err(failed(&format!("pressed {key} on {on}, but {d}")));
    }
    Ok(match did {
        Some(d) => format!("pressed {key} on {on}: {d}"),
        None => format!("pressed {key} on {on}"),
    })
}

/// Types text key by key into element `index`, after what it holds (the
/// caret goes to the end first), or in its place with `clear`; reads the
/// value back after the page's handlers and, when no suggestions are
/// showing, after the field lost the focus (which fires its `change`).
///
/// The value read back must hold what was typed ([`kept`]: every
/// character, in order, case and spacing aside, so a mask that adds
/// its own characters is fine); a character lost is an error that says
/// what the field holds. A field the page emptied as it took the value
/// ([`took`]) is reported so, not as a failure; a `maxlength` that kept
/// characters out is an error that says so. When the page moved the
/// focus on to other fields as it took the text (one box per digit), the
/// text is checked against what they hold together.
pub(super) async fn type_into(
    index: u32,
    text: &str,
    enter: bool,
    clear: bool,
    watch: &Watch,
) -> Result<Done, Fail> {
    let el = usable(index)?;
    let who = describe(index, &el);
    focus::focus(&el);
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    if clear {
        if let Ok(all) = keys::parse("ControlOrMeta+a", is_mac(&window)) {
            keys::press(&el, &all);
        }
        keys::press(&el, &keys::Combo { keys: Keys::default(), key: "Backspace".into() });
    } else {
        caret_to_end(&el);
    }
    let tag = proto::local_name(&el);
    let before = read_value(&el, &tag);
    let typed = keys::type_text(&el, text);
    // Let the page react to the text (suggestions after a debounce).
    watch.settle_for(crate::watch::TYPE_QUIET_MS).await;
    let held = if proto::is_connected(&el) { read_value(&el, &tag) } else { String::new() };
    let mut emptied_on_enter = false;
    if enter {
        // Enter goes where the keys went last (the focus).
        let last = typed.into.last().unwrap_or(&el);
        keys::press(last, &keys::Combo { keys: Keys::default(), key: "Enter".into() });
        watch.settle().await;
        emptied_on_enter =
            proto::is_connected(&el) && !held.trim().is_empty() && read_value(&el, &tag).is_empty();
    }
    let mut summary = format!(
        "typed \"{}\" into {who}{}",
        truncate(text, 60),
        if enter { " and pressed Enter" } else { "" }
    );
    if !proto::is_connected(&el) || watch.leaving() {
        return Ok(Done { summary, value: None });
    }
    let secret = is_secret(&el);
    let mut now = read_value(&el, &tag);
    let candidates = typed_values(&el, &tag, &before, text);
    // In an input, a line break is Enter, which may take the value.
    let entered = emptied_on_enter || (tag == "input" && text.contains('\n') && now.is_empty());
    let mut taken = candidates.is_some() && took(&el, text, &now, watch, entered);
    if !taken && !enter && !watch.added_any() && typed.into.len() <= 1 {
        if let Some(changed) = leave_field(&el, &tag, &now, watch).await {
            if took(&el, text, &changed, watch, false) {
                taken = true;
            } else if secret {
                return Err(failed(&format!(
                    "{who} held what was typed, but when it lost the focus the page changed it (a secret field: its value is not shown)"
                )));
            } else {
                return Err(failed(&format!(
                    "{who} held \"{}\" after typing, but when it lost the focus the page changed it to \"{}\" (the field wants another format, or a widget rewrote it)",
                    truncate(&now, 80),
                    truncate(&changed, 80)
                )));
            }
        }
    }
    if proto::is_connected(&el) {
        now = read_value(&el, &tag);
    }
    if !secret && !before.is_empty() && !clear {
        summary.push_str(&format!(" after \"{}\"", truncate(&before, 40)));
    }
    if taken {
        summary.push_str("; the page took the value: the field is empty again");
        return Ok(Done { summary, value: Some(now) });
    }
    // Not a text field (a terminal drawing the keys itself): nothing to
    // compare.
    let Some(candidates) = candidates else {
        if !secret {
            summary.push_str(&format!("; it now holds \"{}\"", truncate(&now, 100)));
        }
        return Ok(Done { summary, value: (!secret).then_some(now) });
    };
    if let Some(max) = typed.full {
        return Err(failed(&format!(
            "{who} takes at most {max} characters: {}, not all that was typed",
            holds(&now, secret)
        )));
    }
    // The fields the page moved the focus on to, with what they hold.
    let others: Vec<(Element, String)> = typed
        .into
        .iter()
        .filter(|f| **f != el && proto::is_connected(f))
        .map(|f| (f.clone(), read_value(f, &proto::local_name(f))))
        .collect();
    let loose = !matches!(tag.as_str(), "input" | "textarea");
    let together: String =
        std::iter::once(now.clone()).chain(others.iter().map(|(_, v)| v.clone())).collect();
    let any_secret = secret || others.iter().any(|(f, _)| is_secret(f));
    let expected = candidates.first().cloned().unwrap_or_default();
    match kept(&candidates, &together) {
        Ok(()) if any_secret => {}
        Ok(()) => {
            let same = candidates
                .iter()
                .any(|c| *c == together || (loose && collapse(c) == collapse(&together)));
            if same {
                summary.push_str(&format!("; it now holds \"{}\"", truncate(&now, 100)));
            } else {
                summary.push_str(&format!(
                    "; the page formatted it: it now holds \"{}\"",
                    truncate(&now, 100)
                ));
            }
            if !others.is_empty() {
                let held: Vec<String> =
                    others.iter().map(|(_, v)| format!("\"{}\"", truncate(v, 30))).collect();
                summary.push_str(&format!(
                    "; the page moved the focus on to {} more field(s) as it took the text, which hold {}",
                    others.len(),
                    held.join(", ")
                ));
            }
            remember_fill(&el, &now);
        }
        Err(missing) if any_secret => {
            let (had, want) = (together.chars().count(), expected.chars().count());
            return Err(failed(&format!(
                "{who} does not hold what was typed: it holds {had} characters, {} (a secret field: its value is not shown); {missing} typed characters are not in it",
                if had < want {
                    format!("{} fewer than typed", want - had)
                } else {
                    format!("{} more than typed", had - want)
                },
                missing = missing.chars().count()
            )));
        }
        Err(missing) => {
            let list: Vec<String> = missing.chars().map(|c| format!("\"{c}\"")).collect();
            let kind = attr(&el, "type").map(|k| text::lower(&k)).unwrap_or_default();
            let hint = if tag == "input" && formatted_input(&kind) {
                " (a browser takes this field's value whole: fill it in its format)"
            } else {
                ""
            };
            return Err(failed(&format!(
                "{who} holds \"{}\" after typing, not \"{}\": the page did not take {}{hint}",
                truncate(&together, 100),
                truncate(&expected, 100),
                truncate(&list.join(" "), 60)
            )));
        }
    }
    Ok(Done { summary, value: (!secret).then_some(now) })
}

/// What a field may hold after `text` was typed at its end (after
/// `before`), as a browser types it, the whole first: an input takes no
/// line break (its Enter is a key, not a character), and Enter may take
/// what came before it (a to-do list adds it and empties the field), so
/// what follows each line break alone is fine too. `None` for what is no
/// text field.
fn typed_values(el: &Element, tag: &str, before: &str, text: &str) -> Option<Vec<String>> {
    let text = text.replace('\r', "");
    match tag {
        "input" => {
            let kind = el.unchecked_ref::<HtmlInputElement>().type_().to_ascii_lowercase();
            if !text::is_text_input(&kind) {
                return None;
            }
            let parts: Vec<&str> = text.split('\n').collect();
            let mut out = vec![format!("{before}{}", parts.concat())];
            out.extend((1..parts.len()).map(|k| parts[k..].concat()));
            Some(out)
        }
        "textarea" => Some(vec![format!("{before}{text}")]),
        _ if proto::is_content_editable(&el.unchecked_ref::<HtmlElement>()) => {
            Some(vec![format!("{before}{text}")])
        }
        _ => None,
    }
}

/// The characters of `want` that `now` does not keep in order, case and
/// spacing aside (a page may add characters of its own: a mask's
/// brackets and dashes, an editor's line breaks); empty when it keeps
/// them all. The fewest such characters (a longest common subsequence),
/// or for long texts those a first-fit match misses.
fn lost(want: &str, now: &str) -> String {
    // Case aside by `text::lower` (the engine's: no case tables in the
    // module); what was lost is reported lower-cased.
    let want: Vec<char> = text::lower(want).chars().filter(|c| !c.is_whitespace()).collect();
    let have: Vec<char> = text::lower(now).chars().filter(|c| !c.is_whitespace()).collect();
    let (n, m) = (want.len(), have.len());
    if n * m > 1_000_000 {
        let mut at = 0;
        return want
            .iter()
            .filter(|c| match have[at..].iter().position(|h| *h == **c) {
                Some(i) => {
                    at += i + 1;
                    false
                }
                None => true,
            })
            .collect();
    }
    // table[i][j]: the longest common subsequence of want[i..], have[j..].
    let mut table = vec![0u16; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[at(i, j)] = if want[i] == have[j] {
                table[at(i + 1, j + 1)] + 1
            } else {
                table[at(i + 1, j)].max(table[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < n {
        if j < m && want[i] == have[j] {
            i += 1;
            j += 1;
        } else if j < m && table[at(i, j + 1)] >= table[at(i + 1, j)] {
            j += 1;
        } else {
            out.push(want[i]);
            i += 1;
        }
    }
    out
}

/// Whether `now` keeps one of the values a field may hold (`candidates`,
/// the whole first: [`typed_values`]); `Err` with what it lost of the
/// whole.
fn kept(candidates: &[String], now: &str) -> Result<(), String> {
    if candidates.iter().any(|c| lost(c, now).is_empty()) {
        return Ok(());
    }
    Err(candidates.first().map(|c| lost(c, now)).unwrap_or_default())
}

/// Whether the element is a secret field (a password, a one-time code,
/// card data: `marks::is_secret_field`): its value is never quoted in a
/// result, only how many characters it holds.
pub(super) fn is_secret(el: &Element) -> bool {
    proto::local_name(&el) == "input"
        && crate::marks::is_secret_field(
            proto::get_attribute(el, "type").as_deref(),
            proto::get_attribute(el, "autocomplete").as_deref(),
        )
}

/// `it holds "…"`, or for a secret field only how many characters.
fn holds(now: &str, secret: bool) -> String {
    if secret {
        format!(
            "it holds {} characters (a secret field: its value is not shown)",
            now.chars().count()
        )
    } else {
        format!("it holds \"{}\"", truncate(now, 80))
    }
}

/// Whether the page took the value out of the field as it used it: the
/// field is empty now, and the value left it on Enter (`entered`) or
/// shows in an element that appeared elsewhere on the page (a new list
/// item, a chip, a message) — a to-do list adding an item on `change`.
fn took(el: &Element, value: &str, now: &str, watch: &Watch, entered: bool) -> bool {
    // A tag field turns `rust,` into a chip showing `rust`.
    let core = value.trim_matches(|c: char| c.is_whitespace() || c.is_ascii_punctuation());
    now.is_empty() && !core.is_empty() && (entered || watch.added_shows(core, el))
}

/// Puts the caret after the field's text, as a click at its end does.
pub(super) fn caret_to_end(el: &Element) {
    match proto::local_name(&el).as_str() {
        "input" => {
            let i = el.unchecked_ref::<HtmlInputElement>();
            let len = i.value().encode_utf16().count() as u32;
            // Email and number fields have no selection: typing appends there.
            let _ = i.set_selection_range(len, len);
        }
        "textarea" => {
            let a = el.unchecked_ref::<HtmlTextAreaElement>();
            let len = a.value().encode_utf16().count() as u32;
            let _ = a.set_selection_range(len, len);
        }
        _ => {
            let selection =
                proto::owner_document(el).and_then(|d| proto::get_selection(&d).ok().flatten());
            if let Some(sel) = selection {
                let _ = sel.select_all_children(el);
                let _ = sel.collapse_to_end();
            }
        }
    }
}

/// Whether a field offers suggestions of its own (an autocomplete, a
/// combobox, a datalist): leaving it would close them.
pub(super) fn suggests(el: &Element) -> bool {
    attr(el, "role").is_some_and(|r| r == "combobox")
        || proto::has_attribute(&el, "aria-autocomplete")
        || proto::has_attribute(&el, "list")
        || attr(el, "aria-haspopup").is_some_and(|v| v != "false")
        || attr(el, "aria-expanded").is_some_and(|v| v == "true")
}

/// Takes the focus from a field that offers no suggestions and waits for
/// the page's handlers; `Some(value)` when they changed what it holds
/// (`held`).
pub(super) async fn leave_field(
    el: &Element,
    tag: &str,
    held: &str,
    watch: &Watch,
) -> Option<String> {
    if suggests(el) || !proto::is_connected(&el) {
        return None;
    }
    let active = focus::is_active(el);
    if !active {
        return None;
    }
    focus::blur_active(el);
    watch.settle().await;
    let now = read_value(el, tag);
    let same = if matches!(tag, "input" | "textarea") {
        now == held
    } else {
        collapse(&now) == collapse(held)
    };
    (proto::is_connected(&el) && !same).then_some(now)
}

/// Input types whose value is not free text but a browser-checked format.
pub(super) fn formatted_input(kind: &str) -> bool {
    matches!(
        kind,
        "date" | "time" | "datetime-local" | "month" | "week" | "number" | "range" | "color"
    )
}

/// Fills element `index` with `value` and reads it back; a value that did
/// not stick is an error, and so is one the field's `maxlength` cut (the
/// field gets what fits, as a paste gives it). A value the page took out
/// of the field as it used it ([`took`]: a to-do list adding an item on
/// `change` and emptying the field) is reported so, not as a failure.
pub(super) async fn fill(index: u32, value: &str, watch: &Watch) -> Result<Done, Fail> {
    let el = usable(index)?;
    let tag = proto::local_name(&el);
    let who = describe(index, &el);
    let mut secret = false;
    let mut formatted = false;
    // What the field takes of the value, when its `maxlength` cuts it.
    let cut = keys::max_length(&el)
        .filter(|_| matches!(tag.as_str(), "input" | "textarea"))
        .and_then(|m| keys::fitting(value, m, 0, 0).map(|v| (m, v)));
    let put = cut.as_ref().map_or(value, |(_, v)| v.as_str());
    match tag.as_str() {
        "input" => {
            let input = el.unchecked_ref::<HtmlInputElement>();
            let kind = input.type_().to_ascii_lowercase();
            if !text::is_text_input(&kind) {
                let hint = if kind == "file" {
                    "use upload_file"
                } else {
                    "click it instead of filling it"
                };
                return Err(failed(&format!("{who} is a {kind} input: {hint}")));
            }
            if input.read_only() {
                return Err(failed(&format!("{who} is read-only")));
            }
            secret = is_secret(&el);
            formatted = formatted_input(&kind);
            focus::focus(&el);
            set_native_value(&el, "HTMLInputElement", put).map_err(|e| failed(&js_text(&e)))?;
            fire_input_and_change(&el, put, true);
            crate::events::forget_edit(&el);
        }
        "textarea" => {
            let area = el.unchecked_ref::<HtmlTextAreaElement>();
            if area.read_only() {
                return Err(failed(&format!("{who} is read-only")));
            }
            focus::focus(&el);
            set_native_value(&el, "HTMLTextAreaElement", put).map_err(|e| failed(&js_text(&e)))?;
            fire_input_and_change(&el, put, true);
            crate::events::forget_edit(&el);
        }
        "select" => {
            return crate::selects::select_options(
                index,
                &el,
                &[errand_protocol::OptionChoice::Text(value.to_owned())],
            );
        }
        _ if proto::is_content_editable(&el.unchecked_ref::<HtmlElement>()) => {
            // Select everything and insert: editors (and undo) see a
            // person's edit, with `beforeinput` and `input`.
            focus::focus(&el);
            keys::exec(&el, "selectAll", None);
            if value.is_empty() {
                keys::exec(&el, "delete", None);
            } else {
                keys::exec(&el, "insertText", Some(value));
            }
            if collapse(&proto::text_content(&el).unwrap_or_default()) != collapse(value) {
                proto::set_text_content(&el, Some(value));
                fire_input_and_change(&el, value, false);
            }
        }
        _ => {
            return Err(failed(&format!("{who} is not a text field: it cannot be filled")));
        }
    }
    watch.settle().await;
    let now = read_value(&el, &tag);
    let matches = if tag == "input" || tag == "textarea" {
        now == value
    } else {
        collapse(&now) == collapse(value)
    };
    let taken = !matches && took(&el, value, &now, watch, false);
    if let Some((max, _)) = cut.filter(|_| !taken) {
        return Err(failed(&format!(
            "{who} takes at most {max} characters: {}, not the {} characters filled",
            holds(&now, secret),
            value.chars().count()
        )));
    }
    let took_it = |now: String| Done {
        summary: format!(
            "filled {who} with {}; the page took the value: the field is empty again",
            if secret { "a secret".to_owned() } else { format!("\"{}\"", truncate(value, 60)) }
        ),
        value: Some(now),
    };
    if taken {
        return Ok(took_it(now));
    }
    if !matches {
        return Err(failed(&if secret {
            let (had, want) = (now.chars().count(), value.chars().count());
            format!(
                "{who} did not keep the secret filled into it: it holds {had} characters, not {want} (its value is not shown)"
            )
        } else if formatted && now.is_empty() {
            format!(
                "{who} refused \"{}\": the browser wants its own format (dates 2024-05-31, times 13:45, colours #ff8800, numbers within the field's range and step)",
                truncate(value, 60)
            )
        } else {
            format!(
                "{who} holds \"{}\" after filling, not \"{}\"",
                truncate(&now, 80),
                truncate(value, 80)
            )
        }));
    }
    // What the field holds once the page's handlers for leaving it ran
    // (a date widget that reformats or empties it), unless it shows
    // suggestions or something appeared the model may want to use.
    if !secret && !watch.added_any() {
        if let Some(changed) = leave_field(&el, &tag, &now, watch).await {
            if took(&el, value, &changed, watch, false) {
                return Ok(took_it(changed));
            }
            return Err(failed(&format!(
                "{who} held \"{}\" after filling, but when it lost the focus the page changed it to \"{}\" (the field wants another format, or a widget rewrote it: try `type`)",
                truncate(&now, 80),
                truncate(&changed, 80)
            )));
        }
    }
    if !secret {
        remember_fill(&el, &now);
    }
    let summary = if secret {
        format!("filled {who} with a secret")
    } else if value.is_empty() {
        format!("cleared {who}")
    } else {
        format!("filled {who} with \"{}\"", truncate(value, 60))
    };
    Ok(Done { summary, value: (!secret).then_some(now) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_the_page_lost_of_the_typed_text() {
        let typed = "Call me (today) at 5.30, 100% sure!";
        assert_eq!(lost(typed, "Call me today) at 530, 100 sure"), "(.%!");
        assert_eq!(lost("ÉTÉ", "été"), "");
        assert_eq!(lost(typed, typed), "");
        // A mask's own characters, case and spacing are no loss.
        assert_eq!(lost("5551234567", "(555) 123-4567"), "");
        assert_eq!(lost("abc def", "ABCDEF"), "");
        assert_eq!(lost("ab", "ba"), "b");
    }

    #[test]
    fn lets_enter_take_what_came_before_a_line_break() {
        let candidates = vec!["Buy milkWalk dog".to_owned(), "Walk dog".to_owned()];
        assert!(kept(&candidates, "Walk dog").is_ok());
        assert_eq!(kept(&candidates, "Walk"), Err("buymilkdog".to_owned()));
    }

    #[test]
    fn never_quotes_a_secret_field() {
        let said = holds("hunter2", true);
        assert!(!said.contains("hunter2"), "{said}");
        assert!(said.contains("7 characters"), "{said}");
        assert!(holds("abc", false).contains("\"abc\""));
    }
}
