//! Solvers of the MiniWoB tasks added for issue 18: tasks that need what a
//! person sees on the page beside the elements (a sum, a table, a
//! paragraph), controls that act only through listeners (a board's cells, a
//! spinner's arrows, an inbox row's icons), menus that open on hover, a
//! terminal typed into with nothing focused, a multiple select, and copy
//! and paste. Like the others, each reads only what Errand sent the model.

use serde_json::{Value, json};

use super::listing::{self, Line, Listed};
use super::solver::{Actions, between, click, fill, first, named};

/// The solver of `task`, if it is one of these.
///
/// `text` is the user's task, `all` the whole request (with the history of
/// earlier actions and what they made appear), `page` the current page.
pub fn solve(
    task: &str,
    text: &str,
    all: &str,
    page: &str,
    list: &[Listed],
    call: usize,
) -> Option<Actions> {
    Some(match task {
        "simple-arithmetic" => simple_arithmetic(list, call),
        "enter-text-2" => enter_text_2(text, list, call),
        "unicode-test" => unicode_test(text, list, call),
        "find-word" => find_word(text, page, list, call),
        "read-table" => read_table(text, page, list, call),
        "use-spinner" => use_spinner(text, list),
        "click-scroll-list" => click_scroll_list(text, list, call),
        "click-menu" => click_menu(text, list),
        "terminal" => terminal(text, all, list, call),
        "copy-paste" => copy_paste(list, call),
        "copy-paste-2" => copy_paste_2(text, list, call),
        "focus-text-2" => focus_text_2(text, list, call),
        "read-table-2" => read_table_2(page, list, call),
        "drag-items" => drag_items(text, list, call),
        "drag-items-grid" => drag_items_grid(text, list, call),
        "drag-sort-numbers" => drag_sort_numbers(list),
        "tic-tac-toe" => tic_tac_toe(list),
        "social-media-all" | "social-media-some" => social_media_many(text, page, list, call),
        "email-inbox"
        | "email-inbox-delete"
        | "email-inbox-star-reply"
        | "email-inbox-reply"
        | "email-inbox-important"
        | "email-inbox-noscroll" => email_inbox(text, list),
        _ => return None,
    })
}

fn button(e: &Listed) -> bool {
    e.tag == "button"
}

fn submit(list: &[Listed]) -> Result<u32, String> {
    named(list, "Submit", button)
}

fn press(key: &str, index: Option<u32>) -> Value {
    match index {
        Some(i) => json!({"press": {"key": key, "index": i}}),
        None => json!({"press": {"key": key}}),
    }
}

/// The page's text lines (not elements).
fn text_lines(page: &str) -> Vec<String> {
    listing::lines(page)
        .into_iter()
        .filter_map(|l| match l {
            Line::Text(t) => Some(t),
            Line::Element(_) => None,
        })
        .collect()
}

/// `3 x 4 =`, the field's label: the answer goes in the field.
fn simple_arithmetic(list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let field = list.iter().find(|e| e.is_text_field()).ok_or("no text field listed")?;
    let words: Vec<&str> = field.name().trim().trim_end_matches('=').split_whitespace().collect();
    let sum = match words[..] {
        [a, op, b] => {
            let (a, b): (i64, i64) = (
                a.parse().map_err(|_| format!("unreadable {a:?}"))?,
                b.parse().map_err(|_| format!("unreadable {b:?}"))?,
            );
            match op {
                "+" => a + b,
                "-" => a - b,
                "x" | "*" => a * b,
                _ => return Err(format!("unknown operation {op:?}")),
            }
        }
        _ => return Err(format!("no sum in the field's name {:?}", field.name())),
    };
    Ok(vec![fill(field.index, &sum.to_string()), click(submit(list)?)])
}

fn enter_text_2(text: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let word = between(text, "Type \"", "\" in ")?;
    let case = between(text, "\" in all ", " case letters")?;
    let want = if case == "upper" { word.to_uppercase() } else { word.to_lowercase() };
    Ok(vec![fill(first(list, Listed::is_text_field)?, &want), click(submit(list)?)])
}

/// Buttons named in several scripts, some capitalised: the exact name.
fn unicode_test(text: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let want = between(text, "Click on the \"", "\" button.")?;
    let b = list
        .iter()
        .find(|e| button(e) && e.name() == want)
        .ok_or_else(|| format!("no button named exactly {want:?}"))?;
    Ok(vec![click(b.index)])
}

/// `1st`, `2nd`, `3rd`, `7th` → 1, 2, 3, 7.
fn ordinal(s: &str) -> Result<usize, String> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().map_err(|_| format!("unreadable position {s:?}"))
}

/// The paragraph is the longest text line that is not the instruction.
fn find_word(text: &str, page: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let n = ordinal(&between(text, "Find the ", " word")?)?;
    // The paragraph is the text right above the answer field.
    let lines = listing::lines(page);
    let at = lines
        .iter()
        .position(|l| matches!(l, Line::Element(e) if e.is_text_field()))
        .ok_or("no text field listed")?;
    let Some(Line::Text(para)) = at.checked_sub(1).and_then(|i| lines.get(i)) else {
        return Err("no paragraph above the field".into());
    };
    let word = para
        .split_whitespace()
        .nth(n - 1)
        .ok_or_else(|| format!("the paragraph {para:?} has fewer than {n} words"))?;
    let word: String = word.chars().filter(char::is_ascii_alphanumeric).collect();
    Ok(vec![fill(first(list, Listed::is_text_field)?, &word), click(submit(list)?)])
}

/// The table's rows read `Key Value` (or the key and value on two lines).
fn read_table(text: &str, page: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let key = between(text, "Enter the value of ", " into the text field")?;
    let lines = text_lines(page);
    let value = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.contains("Enter the value of"))
        .find_map(|(i, l)| {
            let rest = l.strip_prefix(key.as_str())?;
            if rest.is_empty() {
                lines.get(i + 1).cloned()
            } else {
                rest.strip_prefix(' ')
                    .or_else(|| rest.strip_prefix('\t'))
                    .map(|r| r.trim().to_owned())
            }
        })
        .ok_or_else(|| format!("no row {key:?} among {lines:?}"))?;
    Ok(vec![fill(first(list, Listed::is_text_field)?, &value), click(submit(list)?)])
}

/// Clicks the spinner's arrows until it shows the number, then submits.
fn use_spinner(text: &str, list: &[Listed]) -> Actions {
    let want: i64 = between(text, "Select ", " with the spinner")?
        .trim()
        .parse()
        .map_err(|_| "unreadable number".to_owned())?;
    let field = list.iter().find(|e| e.is_text_field()).ok_or("no spinner field listed")?;
    let now: i64 = field.attr("value").unwrap_or("0").trim().parse().unwrap_or(0);
    if now == want {
        return Ok(vec![click(submit(list)?)]);
    }
    let arrow = if want > now { "spinner-up" } else { "spinner-down" };
    let a = list
        .iter()
        .find(|e| e.attr("icon") == Some(arrow))
        .ok_or_else(|| format!("no {arrow} arrow listed"))?;
    let times = (want - now).unsigned_abs().min(9) as usize;
    Ok(vec![click(a.index); times])
}

/// `Select Alice, Bob from the scroll list and click Submit.`
fn click_scroll_list(text: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let wanted = between(text, "Select ", " from the scroll list")?;
    let select = first(list, |e| e.tag == "select" || e.flag("multiple"))?;
    let options: Vec<&str> = wanted.split(", ").collect();
    Ok(vec![json!({"select_option": {"index": select, "options": options}}), click(submit(list)?)])
}

/// `Select Alice>Bob>Carol`: hovers each item on the path until the last
/// shows, then clicks it.
fn click_menu(text: &str, list: &[Listed]) -> Actions {
    let path = text
        .split_once("Select ")
        .map(|(_, p)| p.lines().next().unwrap_or("").trim().trim_end_matches('.').to_owned())
        .ok_or("the task names no menu path")?;
    let items: Vec<&str> = path.split('>').collect();
    let leaf = items.last().copied().unwrap_or_default();
    if let Some(e) = list.iter().find(|e| e.name() == leaf) {
        return Ok(vec![click(e.index)]);
    }
    // The deepest item on the path that is listed: hover it to open its
    // submenu.
    let shown = items
        .iter()
        .rev()
        .find_map(|i| list.iter().find(|e| e.name() == *i))
        .ok_or_else(|| format!("nothing of {path:?} is listed"))?;
    Ok(vec![json!({"hover": {"index": shown.index}})])
}

/// The terminal: click it (the page focuses its hidden input), type `ls`
/// with nothing else named (the keys go to the focused element), read the
/// files from what the Enter made appear, type `rm <file>` (over two steps:
/// ten actions a step).
fn terminal(text: &str, all: &str, list: &[Listed], call: usize) -> Actions {
    let ext = if text.contains("no file extension") {
        None
    } else {
        let rest = text.split_once("extension .").map(|(_, r)| r).unwrap_or("");
        Some(rest.split_whitespace().next().unwrap_or("").trim_end_matches('.').to_owned())
    };
    let keys = |s: &str| -> Vec<Value> { s.chars().map(|c| press(&c.to_string(), None)).collect() };
    if call == 0 {
        let term =
            list.iter().find(|e| e.text.starts_with("terminal")).ok_or("no terminal listed")?;
        let mut v = vec![click(term.index)];
        v.extend(keys("ls"));
        v.push(press("Enter", None));
        return Ok(v);
    }
    // `appeared: <div> user$ ls | <div> a.png b.sh`: the line after the
    // command.
    const LS: &str = "user$ ls | <div> ";
    let files = all
        .rfind(LS)
        .map(|at| &all[at + LS.len()..])
        .map(|r| r[..r.find(['|', '\n']).unwrap_or(r.len())].trim())
        .ok_or("no `ls` output seen")?;
    let file = files
        .split_whitespace()
        .find(|f| match &ext {
            Some(x) => f.ends_with(&format!(".{x}")),
            None => !f.contains('.'),
        })
        .ok_or_else(|| format!("no file fits {ext:?} among {files:?}"))?;
    let cmd: Vec<char> = format!("rm {file}").chars().collect();
    match call {
        1 => Ok(keys(&cmd[..cmd.len().min(10)].iter().collect::<String>())),
        2 => {
            let mut v = keys(&cmd[cmd.len().min(10)..].iter().collect::<String>());
            v.push(press("Enter", None));
            Ok(v)
        }
        _ => Err("the file was removed but the episode did not end".into()),
    }
}

/// Selects the textarea's text, copies, pastes into the field, submits.
fn copy_paste(list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    copy_into_field(first(list, |e| e.tag == "textarea")?, list)
}

/// Copies the text area `area`'s whole text with the keys, pastes it into
/// the text field, and submits.
fn copy_into_field(area: u32, list: &[Listed]) -> Actions {
    let field = first(list, |e| e.tag == "input" && e.is_text_field())?;
    Ok(vec![
        click(area),
        press("ControlOrMeta+a", Some(area)),
        press("ControlOrMeta+c", Some(area)),
        click(field),
        press("ControlOrMeta+v", Some(field)),
        click(submit(list)?),
    ])
}

/// The board's nine cells in order, each `Some('x')`, `Some('o')` or empty.
fn tic_tac_toe(list: &[Listed]) -> Actions {
    let cells: Vec<&Listed> = list.iter().filter(|e| e.tag == "span").collect();
    if cells.len() != 9 {
        return Err(format!("{} cells listed, wanted 9: {list:?}", cells.len()));
    }
    let mark = |e: &Listed| -> Option<char> {
        match e.attr("icon") {
            Some("x") => Some('x'),
            Some("o") => Some('o'),
            _ => None,
        }
    };
    let board: Vec<Option<char>> = cells.iter().map(|e| mark(e)).collect();
    const LINES: [[usize; 3]; 8] =
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]];
    let complete = |who: char| {
        LINES.iter().find_map(|l| {
            let mine = l.iter().filter(|&&i| board[i] == Some(who)).count();
            let free: Vec<usize> = l.iter().copied().filter(|&i| board[i].is_none()).collect();
            (mine == 2 && free.len() == 1).then(|| free[0])
        })
    };
    let pick = complete('x')
        .or_else(|| complete('o'))
        .or_else(|| [4, 0, 2, 6, 8, 1, 3, 5, 7].into_iter().find(|&i| board[i].is_none()))
        .ok_or("the board is full")?;
    Ok(vec![click(cells[pick].index)])
}

/// The inbox: the sender's row, its trash and star icons; the open email's
/// Reply and Forward; the reply's text area and send icon.
fn email_inbox(text: &str, list: &[Listed]) -> Actions {
    let sender = between(text, "Find the email by ", " and ")?;
    let row = list.iter().position(|e| e.name().starts_with(&format!("{sender} ")));
    let icon_after = |name: &str| -> Result<u32, String> {
        let at = row.ok_or_else(|| format!("no email by {sender} listed"))?;
        list[at + 1..]
            .iter()
            .take_while(|e| !e.name().contains(' ') || e.attr("icon").is_some())
            .find(|e| e.attr("icon") == Some(name))
            .map(|e| e.index)
            .ok_or_else(|| format!("no {name} icon on the email by {sender}"))
    };
    if text.contains("click the trash icon") {
        return Ok(vec![click(icon_after("delete")?)]);
    }
    if text.contains("click the star icon") {
        return Ok(vec![click(icon_after("star")?)]);
    }
    let (body, field, action) = if text.contains("reply to them with the text") {
        (between(text, "with the text \"", "\".")?, "textarea", "Reply")
    } else {
        (between(text, "forward that email to ", ".")?, "input", "Forward")
    };
    if let Some(send) = list.iter().find(|e| e.attr("icon") == Some("send")) {
        let field = first(list, |e| e.tag == field && e.is_text_field())?;
        return Ok(vec![fill(field, &body), click(send.index)]);
    }
    if let Ok(b) = named(list, action, |_| true) {
        return Ok(vec![click(b)]);
    }
    let row = row.ok_or_else(|| format!("no email by {sender} listed"))?;
    Ok(vec![click(list[row].index)])
}

/// `Click the "Like" button on all posts by @ada` (or `on 2 posts`): the
/// icon on each of the user's posts, then Submit.
fn social_media_many(text: &str, page: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let action = between(text, "Click the \"", "\" button on ")?.to_lowercase();
    let user = between(text, " posts by ", " and then")
        .or_else(|_| between(text, " post by ", " and then"))?;
    let amount = between(text, "\" button on ", " post")?;
    let wanted = if amount == "all" {
        usize::MAX
    } else {
        amount.trim().parse().map_err(|_| format!("unreadable amount {amount:?}"))?
    };
    let mut actions = Vec::new();
    for (_, els) in super::steps::tweets(page).iter().filter(|(u, _)| *u == user) {
        if actions.len() >= wanted {
            break;
        }
        if let Some(e) = els.iter().find(|e| e.attr("icon") == Some(action.as_str())) {
            actions.push(click(e.index));
        }
    }
    if actions.is_empty() || (wanted != usize::MAX && actions.len() < wanted) {
        return Err(format!("{} {action} icons found on posts by {user}", actions.len()));
    }
    if actions.len() > 9 {
        return Err("more posts than one step's actions".into());
    }
    actions.push(click(submit(list)?));
    Ok(actions)
}

/// `Copy the text from the 2nd text area below and paste it into the text
/// input`: that area's text, copied and pasted with the keys.
fn copy_paste_2(text: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let n = ordinal(&between(text, "from the ", " text area")?)?;
    let areas: Vec<&Listed> = list.iter().filter(|e| e.tag == "textarea").collect();
    let area = areas.get(n - 1).ok_or_else(|| format!("{} text areas listed", areas.len()))?.index;
    copy_into_field(area, list)
}

/// A table of label and value lines; each field is named by a label.
fn read_table_2(page: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let lines = text_lines(page);
    let mut actions = Vec::new();
    for field in list.iter().filter(|e| e.is_text_field()) {
        let label = field.name();
        let value = lines
            .iter()
            .position(|l| l == label)
            .and_then(|i| lines.get(i + 1))
            .ok_or_else(|| format!("no row {label:?} among {lines:?}"))?;
        actions.push(fill(field.index, value));
    }
    actions.push(click(submit(list)?));
    Ok(actions)
}

fn drag(from: u32, to: u32) -> Value {
    json!({"drag_and_drop": {"from": from, "to": to}})
}

/// The items of the sortable list, in order.
fn items(list: &[Listed]) -> Vec<&Listed> {
    list.iter().filter(|e| e.tag == "li").collect()
}

/// `Drag Gerda to the 3rd position.` / `to the top.` / `up by one position.`
fn drag_items(text: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let rest = text.strip_prefix("Drag ").ok_or("the task names no item")?;
    let items = items(list);
    let (at, item) = items
        .iter()
        .enumerate()
        .find(|(_, e)| rest.starts_with(&format!("{} ", e.name())))
        .ok_or_else(|| format!("no listed item starts {rest:?}"))?;
    let how = &rest[item.name().len() + 1..];
    let to = if how.starts_with("to the top") {
        0
    } else if how.starts_with("to the bottom") {
        items.len() - 1
    } else if how.starts_with("down by one") {
        at + 1
    } else if how.starts_with("up by one") {
        at.checked_sub(1).ok_or("the item is at the top")?
    } else {
        ordinal(&between(how, "to the ", " position")?)? - 1
    };
    let target = items.get(to).ok_or_else(|| format!("no item at position {}", to + 1))?;
    Ok(vec![drag(item.index, target.index)])
}

/// `Drag Mead to the bottom right.` / `up by one.` in a 3×3 grid.
fn drag_items_grid(text: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let rest = text.strip_prefix("Drag ").ok_or("the task names no item")?;
    let items = items(list);
    if items.len() != 9 {
        return Err(format!("{} items listed, wanted 9", items.len()));
    }
    let (at, item) = items
        .iter()
        .enumerate()
        .find(|(_, e)| rest.starts_with(&format!("{} ", e.name())))
        .ok_or_else(|| format!("no listed item starts {rest:?}"))?;
    let how = rest[item.name().len() + 1..].trim_end_matches('.');
    let to = match how {
        "up by one" => at - 3,
        "down by one" => at + 3,
        "left by one" => at - 1,
        "right by one" => at + 1,
        "to the center" => 4,
        place => {
            let place =
                place.strip_prefix("to the ").ok_or_else(|| format!("unknown {place:?}"))?;
            let (row, col) = place.split_once(' ').ok_or_else(|| format!("unknown {place:?}"))?;
            let row = ["top", "center", "bottom"].iter().position(|r| *r == row);
            let col = ["left", "center", "right"].iter().position(|c| *c == col);
            let (Some(r), Some(c)) = (row, col) else {
                return Err(format!("unknown place {place:?}"));
            };
            r * 3 + c
        }
    };
    Ok(vec![drag(item.index, items[to].index)])
}

/// Moves the lowest number not yet in its place there, one drag a step,
/// then submits.
fn drag_sort_numbers(list: &[Listed]) -> Actions {
    let items = items(list);
    let values: Vec<i64> = items
        .iter()
        .map(|e| e.name().trim().parse().map_err(|_| format!("unreadable number {:?}", e.name())))
        .collect::<Result<_, _>>()?;
    let mut sorted = values.clone();
    sorted.sort();
    match (0..values.len()).find(|&i| values[i] != sorted[i]) {
        None => Ok(vec![click(submit(list)?)]),
        Some(i) => {
            let from = (i..values.len()).find(|&j| values[j] == sorted[i]).unwrap_or(i);
            Ok(vec![drag(items[from].index, items[i].index)])
        }
    }
}

/// `Focus into the 2nd input textbox.`
fn focus_text_2(text: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let n = ordinal(&between(text, "Focus into the ", " input")?)?;
    let fields: Vec<&Listed> = list.iter().filter(|e| e.is_text_field()).collect();
    let f = fields.get(n - 1).ok_or_else(|| format!("{} fields listed", fields.len()))?;
    Ok(vec![click(f.index)])
}
