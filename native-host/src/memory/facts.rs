//! Facts on demand (Skyvern's user-detail style): the model may ask for a
//! fact of the user's profile with `ask_user`, and the host answers it from
//! the profile — without bothering the user — when one fact clearly
//! matches the question: by its name ("What is the user's email?" → the
//! fact `email`), or through a small table of synonyms ("Which e-mail?" →
//! `email`, "mobile number" → `phone`, "date of birth" → `birthday`).
//! Anything less clear goes to the user as before.
//!
//! A small profile (at most [`LISTED_FACTS`] facts) is listed in the prompt
//! with its values; a larger one by fact names only, the model asking for
//! the values it needs.

/// Profiles with at most this many facts are listed with their values in
/// the prompt; larger ones by name only.
pub const LISTED_FACTS: usize = 8;

/// Words for the same thing: a fact named by any of them answers a question
/// naming any of them. Phrases are in normalised form ([`words`]).
const SYNONYMS: &[&[&str]] = &[
    &["email", "e mail", "mail", "email address", "e mail address", "mail address"],
    &[
        "phone",
        "telephone",
        "mobile",
        "cell",
        "phone number",
        "telephone number",
        "mobile number",
        "cell phone",
        "tel",
    ],
    &["address", "street", "street address", "postal address", "home address", "mailing address"],
    &["name", "full name"],
    &["first name", "given name", "forename"],
    &["last name", "surname", "family name"],
    &["birthday", "date of birth", "birth date", "birthdate", "dob"],
    &["city", "town"],
    &["zip", "zip code", "postcode", "post code", "postal code"],
    &["country"],
    &["company", "employer", "organisation", "organization"],
];

/// Words saying a question is about the user (or short enough to be about
/// nothing else, like "Which e-mail?").
const ABOUT_THE_USER: &[&str] = &["your", "my", "user", "users", "you", "me", "i", "user s"];

/// Words saying a question is about something else than the user.
const ABOUT_SOMETHING_ELSE: &[&str] =
    &["product", "item", "recipient", "friend", "colleague", "company s", "site", "page", "file"];

/// The fact that answers `question`, if exactly one clearly does: the one
/// matched by the longest phrase (its name, or a synonym of its name) when
/// no other fact is matched by a phrase as long.
pub fn answer<'a>(question: &str, facts: &'a [(String, String)]) -> Option<&'a (String, String)> {
    let q = words(question);
    let q_words: Vec<&str> = q.split(' ').filter(|w| !w.is_empty()).collect();
    if q_words.is_empty() || q_words.iter().any(|w| ABOUT_SOMETHING_ELSE.contains(w)) {
        return None;
    }
    let about_user = q_words.len() <= 4 || q_words.iter().any(|w| ABOUT_THE_USER.contains(w));
    if !about_user {
        return None;
    }
    let padded = format!(" {q} ");
    let mut best: Option<(usize, &(String, String))> = None;
    let mut tie = false;
    for fact in facts {
        let Some(len) = phrases(&fact.0)
            .iter()
            .filter(|p| padded.contains(&format!(" {p} ")))
            .map(|p| p.split(' ').count())
            .max()
        else {
            continue;
        };
        match best {
            Some((b, _)) if len < b => {}
            Some((b, _)) if len == b => tie = true,
            _ => {
                best = Some((len, fact));
                tie = false;
            }
        }
    }
    if tie { None } else { best.map(|(_, f)| f) }
}

/// The phrases that name a fact: its name, and the synonyms of its name.
fn phrases(name: &str) -> Vec<String> {
    let name = words(name);
    let mut out = vec![name.clone()];
    for group in SYNONYMS {
        if group.contains(&name.as_str()) {
            out.extend(group.iter().map(|s| (*s).to_owned()));
        }
    }
    out
}

/// Lower case, letters and digits only, words joined by one space:
/// "E-mail address?" → "e mail address", "date_of_birth" → "date of birth".
pub fn words(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the prompt says about the profile's facts: each with its value for
/// a small profile, names only for a larger one (with how to ask).
pub fn prompt_lines(facts: &[(String, String)]) -> Vec<String> {
    if facts.len() <= LISTED_FACTS {
        return facts
            .iter()
            .map(|(name, value)| format!("- {name}: {}", one_line(value)))
            .collect();
    }
    let names: Vec<&str> = facts.iter().map(|(n, _)| n.as_str()).collect();
    vec![
        format!("Facts in the profile (values not shown here): {}.", names.join(", ")),
        "When the task needs one, ask for it with `ask_user` naming the fact (like \"What is the \
         user's email?\"): Errand answers from the profile at once, without bothering the user."
            .to_owned(),
    ]
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(names: &[&str]) -> Vec<(String, String)> {
        names.iter().map(|n| ((*n).to_owned(), format!("<{n}>"))).collect()
    }

    fn answered(question: &str, facts: &[(String, String)]) -> Option<String> {
        answer(question, facts).map(|(n, _)| n.clone())
    }

    #[test]
    fn a_fact_named_or_meant_by_the_question_answers_it() {
        let facts = profile(&["email", "phone", "address", "name", "birthday", "date_of_birth_x"]);
        for (q, want) in [
            ("Which e-mail?", "email"),
            ("What is the user's email address?", "email"),
            ("Which mail address should I use for you?", "email"),
            ("What is your mobile number?", "phone"),
            ("Telephone?", "phone"),
            ("What is your street address?", "address"),
            ("What is your full name?", "name"),
            ("What is your date of birth?", "birthday"),
        ] {
            assert_eq!(answered(q, &facts).as_deref(), Some(want), "{q}");
        }
    }

    #[test]
    fn names_with_underscores_and_the_longest_match_win() {
        let facts = profile(&["name", "first_name", "work email", "email"]);
        assert_eq!(answered("What is your first name?", &facts).as_deref(), Some("first_name"));
        assert_eq!(answered("What is your name?", &facts).as_deref(), Some("name"));
        assert_eq!(
            answered("Which work email should I use?", &facts).as_deref(),
            Some("work email")
        );
        assert_eq!(answered("Your email?", &facts).as_deref(), Some("email"));
    }

    #[test]
    fn anything_unclear_goes_to_the_user() {
        let facts = profile(&["email", "phone", "home_phone"]);
        // Not in the profile.
        assert_eq!(answered("Which size, M or L?", &facts), None);
        // `home_phone` is named only by "home phone".
        assert_eq!(answered("Which phone number?", &facts).as_deref(), Some("phone"));
        let two = profile(&["email", "mail"]);
        assert_eq!(answered("Which e-mail?", &two), None, "two facts match as well");
        // About something else than the user.
        assert_eq!(answered("Which e-mail should the gift's recipient get?", &facts), None);
        assert_eq!(answered("What is the product name you want?", &profile(&["name"])), None);
        // A long question not about the user.
        assert_eq!(
            answered("Should the order be sent by mail or picked up at the store later?", &facts),
            None
        );
        assert_eq!(answered("", &facts), None);
        assert_eq!(answered("Which email?", &[]), None);
    }

    #[test]
    fn small_profiles_are_listed_with_values_and_large_ones_by_name() {
        let small = profile(&["email", "phone"]);
        assert_eq!(prompt_lines(&small), vec!["- email: <email>", "- phone: <phone>"]);
        let names: Vec<String> = (0..9).map(|i| format!("fact{i}")).collect();
        let large: Vec<(String, String)> =
            names.iter().map(|n| (n.clone(), "secret-ish value".to_owned())).collect();
        let lines = prompt_lines(&large).join("\n");
        assert!(lines.contains("fact0, fact1") && lines.contains("fact8."), "{lines}");
        assert!(!lines.contains("secret-ish value"), "{lines}");
        assert!(lines.contains("ask_user"), "{lines}");
        assert_eq!(prompt_lines(&large[..LISTED_FACTS]).len(), LISTED_FACTS);
    }
}
