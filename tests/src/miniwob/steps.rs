//! Solvers of the MiniWoB tasks that take several steps (tabs, popups,
//! autocompletes, trees, pagination, menus, inbox views) or read text
//! beside the elements (labels, durations, tweet authors). Each is called
//! once per step with the page Errand sent the model and answers from what
//! is listed there, as a model would; the episode's end shows as MiniWoB's
//! START cover, which [`super::solver`] answers with `done`.

use serde_json::Value;

use super::listing::{self, Line, Listed};
use super::solver::{Actions, between, click, fill, first, named};

/// The solver of `task`, if it is one of these.
pub fn solve(task: &str, text: &str, page: &str, list: &[Listed], call: usize) -> Option<Actions> {
    Some(match task {
        "click-tab-2" => click_tab_2(text, list),
        "login-user-popup" => login_user_popup(text, list),
        "use-autocomplete" => use_autocomplete(text, list),
        "navigate-tree" => navigate_tree(text, list),
        "form-sequence-2" => form_sequence_2(text, list, call),
        "search-engine" => search_engine(text, list, call),
        "social-media" => social_media(text, page),
        "email-inbox-forward" => email_inbox_forward(text, list),
        "buy-ticket" => buy_ticket(text, page, call),
        "multi-layouts" => multi_layouts(text, list, call),
        _ => return None,
    })
}

fn button(e: &Listed) -> bool {
    e.tag == "button"
}

/// The link shown on the open tab, else the next tab after the selected one.
fn click_tab_2(text: &str, list: &[Listed]) -> Actions {
    let want = between(text, "click on the link \"", "\".")?;
    if let Some(link) = list.iter().find(|e| e.attr("role") != Some("tab") && e.name() == want) {
        return Ok(vec![click(link.index)]);
    }
    let tabs: Vec<&Listed> = list.iter().filter(|e| e.attr("role") == Some("tab")).collect();
    let at = tabs
        .iter()
        .position(|t| t.flag("selected"))
        .ok_or_else(|| format!("no selected tab among {} tabs", tabs.len()))?;
    if at + 1 >= tabs.len() {
        return Err(format!("the link {want:?} is on no tab"));
    }
    Ok(vec![click(tabs[at + 1].index)])
}

/// Fills and logs in; a session popup that opened on a field is cancelled
/// first (its OK leaves the page).
fn login_user_popup(text: &str, list: &[Listed]) -> Actions {
    if let Ok(cancel) = named(list, "Cancel", button) {
        return Ok(vec![click(cancel)]);
    }
    let user = between(text, "username \"", "\" and the")?;
    let password = between(text, "password \"", "\" into the")?;
    let name_field = first(list, |e| e.is_text_field() && e.input_type() != Some("password"))?;
    let pass_field = first(list, |e| e.input_type() == Some("password"))?;
    Ok(vec![
        fill(name_field, &user),
        fill(pass_field, &password),
        click(named(list, "OK", button)?),
    ])
}

/// `Enter an item that starts with "Ce" and ends with "lic".`: the start
/// and, when given, the end.
fn autocomplete_wanted(text: &str) -> Result<(String, Option<String>), String> {
    let start = between(text, "starts with \"", "\"")?;
    let end = between(text, "ends with \"", "\"").ok();
    Ok((start, end))
}

/// Types the start, picks the suggestion that fits, submits.
fn use_autocomplete(text: &str, list: &[Listed]) -> Actions {
    let (start, end) = autocomplete_wanted(text)?;
    let fits = |s: &str| {
        !s.is_empty() && s.starts_with(&start) && end.as_ref().is_none_or(|e| s.ends_with(e))
    };
    let field = list.iter().find(|e| e.is_text_field()).ok_or("no text field listed")?;
    if let Some(item) = list.iter().find(|e| !e.is_text_field() && !button(e) && fits(e.name())) {
        return Ok(vec![click(item.index)]);
    }
    let value = field.attr("value").unwrap_or("");
    if fits(value) {
        return Ok(vec![click(named(list, "Submit", button)?)]);
    }
    if value == start {
        let seen: Vec<&str> = list.iter().map(|e| e.name()).collect();
        return Err(format!("no suggestion fits among {seen:?}"));
    }
    Ok(vec![serde_json::json!({"type": {"index": field.index, "text": start}})])
}

/// Clicks the item named as asked, else opens the first closed folder.
fn navigate_tree(text: &str, list: &[Listed]) -> Actions {
    let want = between(text, "named \"", "\".")?;
    if let Some(item) = list.iter().find(|e| e.name() == want) {
        return Ok(vec![click(item.index)]);
    }
    let closed = list
        .iter()
        .find(|e| e.attr("icon") == Some("folder-closed"))
        .ok_or_else(|| format!("{want:?} is not listed and no folder is closed"))?;
    Ok(vec![click(closed.index)])
}

/// `1st`, `2nd`, `3rd`, `7th` → 1, 2, 3, 7.
fn ordinal(s: &str) -> Result<usize, String> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().map_err(|_| format!("unreadable position {s:?}"))
}

fn form_sequence_2(text: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let radio = ordinal(&between(text, "Check the ", " radio button")?)?;
    let number = between(text, "enter the number \"", "\" into")?;
    let field = ordinal(&between(text, "into the ", " textbox")?)?;
    let radios: Vec<&Listed> = list.iter().filter(|e| e.input_type() == Some("radio")).collect();
    let fields: Vec<&Listed> = list.iter().filter(|e| e.is_text_field()).collect();
    let (Some(r), Some(f)) = (radios.get(radio - 1), fields.get(field - 1)) else {
        return Err(format!("{} radios and {} text fields listed", radios.len(), fields.len()));
    };
    Ok(vec![click(r.index), fill(f.index, &number), click(named(list, "Submit", button)?)])
}

/// Searches, goes to the result's page (three results a page), clicks it.
fn search_engine(text: &str, list: &[Listed], call: usize) -> Actions {
    let query = between(text, "enter \"", "\" and press")?;
    let position = ordinal(&between(text, "click the ", " search result")?)?;
    let (page, slot) = ((position - 1) / 3 + 1, (position - 1) % 3);
    let pager = |e: &Listed| e.name().parse::<u32>().is_ok() || matches!(e.name(), "<" | ">");
    let results: Vec<&Listed> =
        list.iter().filter(|e| e.tag == "a" && !pager(e) && !e.name().is_empty()).collect();
    match call {
        0 => {
            let field = first(list, Listed::is_text_field)?;
            Ok(vec![fill(field, &query), click(named(list, "Search", button)?)])
        }
        // The first page shows after the search.
        1 if page > 1 => Ok(vec![click(named(list, &page.to_string(), |e| e.tag == "a")?)]),
        1 | 2 => {
            let result = results.get(slot).ok_or_else(|| {
                format!("{} results listed, wanted the {position}th", results.len())
            })?;
            Ok(vec![click(result.index)])
        }
        _ => Err("the result was clicked but the episode did not end".into()),
    }
}

/// The elements of each tweet: a text line with an `@user` starts a tweet.
pub(super) fn tweets(page: &str) -> Vec<(String, Vec<Listed>)> {
    let mut out: Vec<(String, Vec<Listed>)> = Vec::new();
    for line in listing::lines(page) {
        match line {
            Line::Text(t) => {
                if let Some(user) = t.split_whitespace().find(|w| w.starts_with('@') && w.len() > 1)
                {
                    out.push((user.to_owned(), Vec::new()));
                }
            }
            Line::Element(e) => {
                if let Some((_, els)) = out.last_mut() {
                    els.push(e);
                }
            }
        }
    }
    out
}

/// Reply, Retweet and Like are icons on the tweet; the other actions are in
/// its "more" menu, opened first.
fn social_media(text: &str, page: &str) -> Actions {
    let user = between(text, "For the user ", ", click on the \"")?;
    let action = between(text, "click on the \"", "\" button")?;
    let all = tweets(page);
    // The instruction's own line names the user too: the tweet is the
    // group with controls.
    let els = all
        .iter()
        .find(|(u, els)| *u == user && els.iter().any(|e| e.attr("icon").is_some()))
        .map(|(_, els)| els)
        .ok_or_else(|| {
            format!("no tweet by {user} among {:?}", all.iter().map(|t| &t.0).collect::<Vec<_>>())
        })?;
    let icon = |name: &str| els.iter().find(|e| e.attr("icon") == Some(name)).map(|e| e.index);
    if matches!(action.as_str(), "Reply" | "Retweet" | "Like") {
        let index = icon(&action.to_lowercase())
            .ok_or_else(|| format!("no {action} icon on the tweet by {user}: {els:?}"))?;
        return Ok(vec![click(index)]);
    }
    let item = els.iter().find(|e| {
        e.name() == action
            || e.name().strip_prefix(action.as_str()).is_some_and(|r| r.starts_with(' '))
    });
    match item {
        Some(item) => Ok(vec![click(item.index)]),
        None => {
            let more =
                icon("more").ok_or_else(|| format!("no menu icon on the tweet by {user}"))?;
            Ok(vec![click(more)])
        }
    }
}

/// Opens the sender's email, Forward, fills the recipient, sends.
fn email_inbox_forward(text: &str, list: &[Listed]) -> Actions {
    let sender = between(text, "Find the email by ", " and forward")?;
    let to = between(text, "forward that email to ", ".")?;
    if let Some(send) = list.iter().find(|e| e.attr("icon") == Some("send")) {
        let field = first(list, |e| e.tag == "input" && e.is_text_field())?;
        return Ok(vec![fill(field, &to), click(send.index)]);
    }
    if let Ok(forward) = named(list, "Forward", |_| true) {
        return Ok(vec![click(forward)]);
    }
    let prefix = format!("{sender} ");
    let email = list
        .iter()
        .find(|e| e.name().starts_with(&prefix))
        .ok_or_else(|| format!("no email by {sender} listed"))?;
    Ok(vec![click(email.index)])
}

/// `14h 18m` → minutes.
fn duration(s: &str) -> Option<u32> {
    let (h, m) = s.trim().split_once("h ")?;
    Some(h.parse::<u32>().ok()? * 60 + m.strip_suffix('m')?.parse::<u32>().ok()?)
}

/// Each "Book for $N" button with the duration shown above it.
fn tickets(page: &str) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    let mut last = None;
    for line in listing::lines(page) {
        match line {
            Line::Text(t) => last = duration(&t).or(last),
            Line::Element(e) => {
                let price = e.name().rsplit_once('$').and_then(|(_, p)| p.parse().ok());
                if let (Some(price), Some(minutes)) = (price, last) {
                    out.push((e.index, price, minutes));
                }
            }
        }
    }
    out
}

fn buy_ticket(text: &str, page: &str, call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let want = between(text, "Buy the ticket with the ", ".")?;
    let all = tickets(page);
    let key = |t: &&(u32, u32, u32)| match want.as_str() {
        "cheapest cost" | "most expensive cost" => t.1,
        _ => t.2,
    };
    let pick = match want.as_str() {
        "cheapest cost" | "shortest duration" => all.iter().min_by_key(key),
        "most expensive cost" | "longest duration" => all.iter().max_by_key(key),
        other => return Err(format!("unknown choice {other:?}")),
    };
    let (index, _, _) = pick.ok_or("no tickets listed")?;
    Ok(vec![click(*index)])
}

/// Fills the three fields by their labels, then presses the last control
/// (Submit, Search, Go! — a button or a clickable div).
fn multi_layouts(text: &str, list: &[Listed], call: usize) -> Actions {
    if call > 0 {
        return Ok(vec![]);
    }
    let genre = between(text, "Search for ", " movies directed by ")?;
    let director = between(text, "directed by ", " from year ")?;
    let year = between(text, "from year ", ".")?;
    let mut actions: Vec<Value> = Vec::new();
    for field in list.iter().filter(|e| e.is_text_field()) {
        let label = field.attr("label").unwrap_or("").to_lowercase();
        let value = if label.contains("genre") {
            &genre
        } else if label.contains("director") {
            &director
        } else if label.contains("year") || label.contains("date") {
            &year
        } else {
            return Err(format!("a field without a known label: {field:?}"));
        };
        actions.push(fill(field.index, value));
    }
    if actions.len() != 3 {
        return Err(format!("{} labelled fields listed, wanted 3", actions.len()));
    }
    let submit = list.iter().rev().find(|e| !e.is_text_field()).ok_or("no submit control")?;
    actions.push(click(submit.index));
    Ok(actions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_positions_durations_and_autocomplete_wishes() {
        assert_eq!(ordinal("7th").unwrap(), 7);
        assert_eq!(ordinal("2nd").unwrap(), 2);
        assert_eq!(duration("14h 18m"), Some(858));
        assert_eq!(duration("Duration:"), None);
        assert_eq!(
            autocomplete_wanted("Enter an item that starts with \"Ce\" and ends with \"lic\".")
                .unwrap(),
            ("Ce".into(), Some("lic".into()))
        );
        assert_eq!(
            autocomplete_wanted("Enter an item that starts with \"Ba\".").unwrap(),
            ("Ba".into(), None)
        );
    }

    #[test]
    fn pairs_tickets_with_the_duration_above() {
        let page = "Duration:\n14h 18m\n[1]<button>Book for $390</button>\nDuration:\n5h 6m\n\
                    [2]<button>Book for $1927</button>";
        assert_eq!(tickets(page), vec![(1, 390, 858), (2, 1927, 306)]);
        let text = "Buy the ticket with the shortest duration.";
        assert_eq!(buy_ticket(text, page, 0).unwrap(), vec![click(2)]);
    }

    #[test]
    fn groups_tweet_controls_under_their_author() {
        let page = "Rosetta @mauris\n[1]<span>9h ago</span>\nPorta.\n[2]<span icon=reply></span>\n\
                    [3]<span icon=more></span>\nCohen @leo\n[4]<span icon=like></span>\n\
                    [5]<span icon=more></span>\n[6]<li>Mute @leo</li>";
        let all = tweets(page);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].0, "@mauris");
        assert_eq!(all[1].1.len(), 3);
        let ask = |a: &str| format!("For the user @leo, click on the \"{a}\" button.");
        assert_eq!(social_media(&ask("Mute"), page).unwrap(), vec![click(6)]);
        assert_eq!(social_media(&ask("Like"), page).unwrap(), vec![click(4)]);
        assert_eq!(social_media(&ask("Block"), page).unwrap(), vec![click(5)]);
    }
}
