//! Scrubbing secret values out of everything that leaves the host.
//!
//! A [`Scrubber`] replaces every occurrence of a secret's value — as is,
//! and in the forms a page or a protocol writes it in: URL-encoded (a GET
//! form's query, a `data:` URL, a fragment: every WHATWG percent-encode set,
//! `%20` and `+` for spaces, upper- and lower-case hex), JSON-escaped and
//! HTML-escaped — by its placeholder `{{secret:NAME}}`. Matching is exact
//! and linear in the text whatever the number of secrets: one Aho-Corasick
//! automaton over every form of every value, leftmost-longest (a value
//! that holds another is replaced whole).
//!
//! The agent builds one per step ([`crate::agent`]): every value filled in
//! the task so far, and every value of a secret allowed on the page's
//! origin or on the origin of one of its frames. It is applied at the
//! entry (the observation as soon as it arrives, each action's result) and
//! again at every exit (each message to a model, each panel event, each
//! database row); the log has its own, holding every secret the process
//! has loaded ([`log_scrubber`]).
//!
//! Every value is scrubbed, however short: a 3-digit PIN is a secret too.
//! The cost is that a short value also masks the same characters where the
//! page shows them for another reason (on the secret's own sites only).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use errand_protocol::Observation;
use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::llm::ChatMessage;
use crate::memory::store::{ModelCallRow, StepRow};

/// WHATWG fragment percent-encode set.
const FRAGMENT: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b'<').add(b'>').add(b'`');
/// WHATWG query percent-encode set (special-query adds `'`).
const QUERY: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b'#').add(b'<').add(b'>');
const SPECIAL_QUERY: &AsciiSet = &QUERY.add(b'\'');
/// WHATWG path percent-encode set.
const PATH: &AsciiSet = &QUERY.add(b'?').add(b'`').add(b'{').add(b'}');
/// WHATWG userinfo percent-encode set.
const USERINFO: &AsciiSet = &PATH
    .add(b'/')
    .add(b':')
    .add(b';')
    .add(b'=')
    .add(b'@')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'|');
/// WHATWG component percent-encode set (`encodeURI`-like components).
const COMPONENT: &AsciiSet = &USERINFO.add(b'$').add(b'%').add(b'&').add(b'+').add(b',');
/// `encodeURIComponent`: everything but `A-Z a-z 0-9 - _ . ! ~ * ' ( )`.
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');
/// `application/x-www-form-urlencoded` (a GET form's query): everything
/// but `A-Z a-z 0-9 * - . _`, a space as `+`.
const FORM: &AsciiSet = &NON_ALPHANUMERIC.remove(b'*').remove(b'-').remove(b'.').remove(b'_');

/// The forms a value may take in text that quotes a page, a URL or JSON.
/// The value itself first; no duplicates, none empty.
pub fn forms(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut add = |out: &mut Vec<String>, s: String| {
        if !s.is_empty() && seen.insert(s.clone()) {
            out.push(s);
        }
    };
    add(&mut out, value.to_owned());
    // URL-encoded, as each part of a URL encodes it, with `%20` and `+`.
    for set in
        [CONTROLS, FRAGMENT, QUERY, SPECIAL_QUERY, PATH, USERINFO, COMPONENT, URI_COMPONENT, FORM]
    {
        let encoded = utf8_percent_encode(value, set).to_string();
        let plus = encoded.replace("%20", "+");
        for e in [encoded, plus] {
            add(&mut out, lower_hex(&e));
            add(&mut out, e);
        }
    }
    // JSON string content (serde's escapes), and with `& < > '` as
    // `\u0026`… (JSON made safe for HTML).
    let json = serde_json::to_string(value).unwrap_or_default();
    let json = json.get(1..json.len().saturating_sub(1)).unwrap_or_default().to_owned();
    let safe = json
        .replace('&', "\\u0026")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('\'', "\\u0027");
    add(&mut out, json);
    add(&mut out, safe);
    // HTML-escaped: text content, and attribute values with each usual
    // spelling of the quotes.
    let text = value.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    for (dq, sq) in
        [("&quot;", "&#39;"), ("&#34;", "&#39;"), ("&quot;", "&#x27;"), ("&#x22;", "&#x27;")]
    {
        add(&mut out, text.replace('"', dq).replace('\'', sq));
    }
    add(&mut out, text);
    // As the content script writes values and text into the element list
    // (`extension/src/text.rs`): whitespace collapsed, invisible marks
    // dropped, `"` as `'` in attribute values, and cut with `…` (at 40 to
    // 80 characters: a long value shows as its start).
    let base = out.clone();
    for form in &base {
        let written = written(form);
        let quoted = written.replace('"', "'");
        for w in [written, quoted] {
            add(&mut out, w);
        }
    }
    out
}

/// The shortest start of a value that, cut with `…`, is scrubbed.
const MIN_CUT_CHARS: usize = 3;

/// `text` as `text::collapse` writes it.
fn written(text: &str) -> String {
    let invisible = |c: char| matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}');
    let cleaned: String = text.chars().filter(|c| !invisible(*c)).collect();
    cleaned.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Each start of `text` of at least [`MIN_CUT_CHARS`] characters, as
/// `text::truncate` leaves it before its `…` (trailing spaces trimmed).
fn cuts_of(text: &str) -> impl Iterator<Item = &str> {
    text.char_indices()
        .skip(MIN_CUT_CHARS)
        .map(move |(end, _)| text[..end].trim_end())
        .filter(|c| c.chars().count() >= MIN_CUT_CHARS)
}

/// The cut mark `text::truncate` writes.
const ELLIPSIS: &str = "…";

/// `%2f` for `%2F` (some encoders write lower-case hex).
fn lower_hex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let n = tail.len().min(3);
        out.push_str(&tail[..n].to_ascii_lowercase());
        rest = &tail[n..];
    }
    out.push_str(rest);
    out
}

/// Replaces secret values by their placeholders. Cheap to clone.
#[derive(Clone, Default)]
pub struct Scrubber {
    inner: Option<Arc<Automaton>>,
}

struct Automaton {
    ac: AhoCorasick,
    /// The placeholder for each pattern.
    replacement: Vec<String>,
    /// Each start of each form (see [`cuts`]) → its placeholder: a value
    /// cut by the element list shows as its start and `…`. Looked up only
    /// before each `…` of a text, not searched for everywhere.
    cuts: std::collections::HashMap<String, String>,
    /// The longest key of `cuts`, in bytes.
    longest_cut: usize,
    /// The first [`MIN_CUT_CHARS`] bytes of every key of `cuts`, sorted: a
    /// cheap test before a look-up.
    cut_heads: Vec<[u8; MIN_CUT_CHARS]>,
    /// One bit per pair of first bytes of the keys of `cuts`: a test cheaper
    /// still.
    cut_pairs: Vec<u64>,
}

impl Automaton {
    /// Whether `text` holds a form, or a start of one before a `…`.
    fn finds(&self, text: &str) -> bool {
        self.ac.is_match(text) || self.cut_before(text, 0).is_some()
    }

    /// The first `…` at or after `from` that ends a start of a form:
    /// `(where the start begins, where the … ends, placeholder)`.
    fn cut_before(&self, text: &str, from: usize) -> Option<(usize, usize, &str)> {
        if self.cuts.is_empty() {
            return None;
        }
        let mut at = from;
        while let Some(i) = text[at..].find(ELLIPSIS) {
            let end = at + i;
            // The longest start ending here.
            let shortest = end.saturating_sub(self.longest_cut);
            let bytes = text.as_bytes();
            for begin in shortest..end.saturating_sub(MIN_CUT_CHARS - 1) {
                let pair = usize::from(bytes[begin]) << 8 | usize::from(bytes[begin + 1]);
                if self.cut_pairs[pair / 64] & (1 << (pair % 64)) == 0 {
                    continue;
                }
                let head: [u8; MIN_CUT_CHARS] = [bytes[begin], bytes[begin + 1], bytes[begin + 2]];
                if self.cut_heads.binary_search(&head).is_err() || !text.is_char_boundary(begin) {
                    continue;
                }
                if let Some(p) = self.cuts.get(&text[begin..end]) {
                    return Some((begin, end + ELLIPSIS.len(), p));
                }
            }
            at = end + ELLIPSIS.len();
        }
        None
    }

    fn replace(&self, text: &str) -> String {
        let mut out = if self.ac.is_match(text) {
            self.ac.replace_all(text, &self.replacement)
        } else {
            text.to_owned()
        };
        let mut from = 0;
        while let Some((begin, end, placeholder)) = self.cut_before(&out, from) {
            out.replace_range(begin..end, placeholder);
            from = begin + placeholder.len();
        }
        out
    }
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, c) = self.inner.as_ref().map_or((0, 0), |a| (a.replacement.len(), a.cuts.len()));
        write!(f, "Scrubber({n} patterns, {c} cut starts)")
    }
}

impl Scrubber {
    /// A scrubber for these `(name, value)` pairs (empty values ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Scrubber {
        // One placeholder per form; a form shared by two secrets (the same
        // value under two names) keeps the first name.
        let mut patterns: BTreeMap<String, String> = BTreeMap::new();
        let mut cuts = std::collections::HashMap::new();
        for (name, value) in secrets {
            if value.is_empty() {
                continue;
            }
            let placeholder = crate::memory::secrets::placeholder(name);
            for form in forms(value) {
                for cut in cuts_of(&form) {
                    cuts.entry(cut.to_owned()).or_insert_with(|| placeholder.clone());
                }
                patterns.entry(form).or_insert_with(|| placeholder.clone());
            }
        }
        if patterns.is_empty() {
            return Scrubber::default();
        }
        let longest_cut = cuts.keys().map(String::len).max().unwrap_or(0);
        let mut cut_heads: Vec<[u8; MIN_CUT_CHARS]> = cuts
            .keys()
            .filter_map(|k| {
                Some([*k.as_bytes().first()?, *k.as_bytes().get(1)?, *k.as_bytes().get(2)?])
            })
            .collect();
        cut_heads.sort_unstable();
        cut_heads.dedup();
        let mut cut_pairs = vec![0u64; 65536 / 64];
        for h in &cut_heads {
            let pair = usize::from(h[0]) << 8 | usize::from(h[1]);
            cut_pairs[pair / 64] |= 1 << (pair % 64);
        }
        let (keys, replacement): (Vec<String>, Vec<String>) = patterns.into_iter().unzip();
        let ac = AhoCorasickBuilder::new().match_kind(MatchKind::LeftmostLongest).build(&keys);
        let ac = match ac {
            Ok(ac) => ac,
            Err(e) => {
                // Only a pattern set too large for the default automaton
                // gets here (4 KB values, thousands of secrets).
                tracing::error!("cannot build the secret scrubber's automaton: {e}");
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .kind(Some(aho_corasick::AhoCorasickKind::NoncontiguousNFA))
                    .build(&keys)
                    .expect("a noncontiguous NFA takes any pattern set")
            }
        };
        let automaton = Automaton { ac, replacement, cuts, longest_cut, cut_heads, cut_pairs };
        Scrubber { inner: Some(Arc::new(automaton)) }
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    /// Whether `text` holds any form of a value.
    pub fn finds(&self, text: &str) -> bool {
        self.inner.as_ref().is_some_and(|a| a.finds(text))
    }

    /// `text` with every form of every value replaced by its placeholder.
    pub fn text(&self, text: &str) -> String {
        match &self.inner {
            Some(a) if a.finds(text) => a.replace(text),
            _ => text.to_owned(),
        }
    }

    /// [`Scrubber::text`] in place.
    pub fn string(&self, text: &mut String) {
        if let Some(a) = &self.inner {
            if a.finds(text) {
                *text = a.replace(text);
            }
        }
    }

    fn option(&self, text: &mut Option<String>) {
        if let Some(t) = text {
            self.string(t);
        }
    }

    /// The entry guard for what the page says: the text, the title, the
    /// address, and each element's name, value, role, type and target. An
    /// element's `origin` (a frame's, read by its content script) is left
    /// alone: secrets are checked against it.
    pub fn observation(&self, obs: &mut Observation) {
        if self.is_empty() {
            return;
        }
        self.string(&mut obs.text);
        self.string(&mut obs.title);
        self.string(&mut obs.url);
        self.option(&mut obs.fallback);
        // The elements' strings are searched as one text (one pass instead
        // of thousands of short ones); only the elements it finds something
        // in are scrubbed field by field.
        let Some(a) = &self.inner else { return };
        let mut joined = String::new();
        let mut ends: Vec<usize> = Vec::with_capacity(obs.elements.len());
        for e in &obs.elements {
            for field in [
                Some(&e.name),
                Some(&e.tag),
                e.value.as_ref(),
                e.role.as_ref(),
                e.input_type.as_ref(),
                e.target.as_ref(),
            ]
            .into_iter()
            .flatten()
            {
                joined.push_str(field);
                joined.push('\0');
            }
            ends.push(joined.len());
        }
        let mut hits: Vec<usize> = a.ac.find_iter(&joined).map(|m| m.start()).collect();
        let mut from = 0;
        while let Some((begin, end, _)) = a.cut_before(&joined, from) {
            hits.push(begin);
            from = end;
        }
        let mut touched: Vec<usize> =
            hits.iter().map(|h| ends.partition_point(|e| e <= h)).collect();
        touched.sort_unstable();
        touched.dedup();
        for i in touched {
            let Some(e) = obs.elements.get_mut(i) else { continue };
            self.string(&mut e.name);
            self.string(&mut e.tag);
            self.option(&mut e.value);
            self.option(&mut e.role);
            self.option(&mut e.input_type);
            self.option(&mut e.target);
        }
    }

    /// The exit guard for a model call: every message's text (the images
    /// were blanked by the content script before the capture).
    pub fn messages(&self, messages: &mut [ChatMessage]) {
        for m in messages {
            self.string(&mut m.content);
        }
    }

    /// The exit guard for the database's step rows.
    pub fn step_row(&self, row: &mut StepRow) {
        self.string(&mut row.evaluation);
        self.string(&mut row.memory);
        self.string(&mut row.next_goal);
        self.string(&mut row.actions_json);
        self.option(&mut row.url);
    }

    /// The exit guard for the database's model-call rows (a server's
    /// error may quote the request).
    pub fn call_row(&self, row: &mut ModelCallRow) {
        self.option(&mut row.error);
    }

    /// Every string inside any serde value (a task event for the panel, an
    /// outcome for the database), through its JSON form; the value as it
    /// was when it has nothing to scrub.
    pub fn serde<T: serde::Serialize + serde::de::DeserializeOwned>(&self, value: T) -> T {
        let Some(a) = &self.inner else { return value };
        let Ok(mut json) = serde_json::to_value(&value) else { return value };
        let mut changed = false;
        walk(&mut json, &mut |s: &mut String| {
            if a.finds(s) {
                *s = a.replace(s);
                changed = true;
            }
        });
        if !changed {
            return value;
        }
        serde_json::from_value(json).unwrap_or(value)
    }
}

fn walk(v: &mut serde_json::Value, f: &mut impl FnMut(&mut String)) {
    use serde_json::Value;
    match v {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|i| walk(i, f)),
        Value::Object(map) => map.values_mut().for_each(|i| walk(i, f)),
        _ => {}
    }
}

/// The log's scrubber: every secret this process has loaded.
static LOG: RwLock<Option<(BTreeMap<String, String>, Scrubber)>> = RwLock::new(None);

/// Adds secrets to the log's scrubber (they stay for the process's life:
/// an old task's lines are still written after a new task starts).
pub fn scrub_log_too<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let mut log = LOG.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (values, scrubber) = log.get_or_insert_with(Default::default);
    let before = values.len();
    for (name, value) in secrets {
        if !value.is_empty() {
            values.entry(value.to_owned()).or_insert_with(|| name.to_owned());
        }
    }
    if values.len() != before {
        *scrubber = Scrubber::new(values.iter().map(|(v, n)| (n.as_str(), v.as_str())));
    }
}

/// The scrubber the log writer applies to every line.
pub fn log_scrubber() -> Scrubber {
    LOG.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .map(|(_, s)| s.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: &str = "hunter 2&\"x";

    #[test]
    fn every_form_of_a_value_becomes_its_placeholder() {
        let s = Scrubber::new([("pw", V)]);
        for text in [
            "searched: hunter 2&\"x.",
            "https://a.example/s?q=hunter+2%26%22x&x=1",
            "https://a.example/s?q=hunter%202%26%22x",
            "https://a.example/s#hunter%202&%22x",
            "https://a.example/s?q=hunter%202&%22x",
            "data:text/plain,hunter%202%26%22x",
            "{\"v\":\"hunter 2&\\\"x\"}",
            "{\"v\":\"hunter 2\\u0026\\\"x\"}",
            "<input value=\"hunter 2&amp;&quot;x\">",
            "<input value=\"hunter 2&amp;&#34;x\">",
            // As the element list writes a value: `"` as `'`, spaces
            // collapsed, cut.
            "1<input=\"Code\" value=\"hunter 2&'x\">",
            "1<input=\"Code\" value=\"Member hunter 2&'…\">",
            "3<a href=\"data:text/plain,hunter 2&'x\">",
        ] {
            let out = s.text(text);
            assert!(out.contains("{{secret:pw}}"), "{text} → {out}");
            assert!(!s.finds(&out), "{out}");
            assert!(!out.contains("hunter"), "{text} → {out}");
        }
        assert_eq!(s.text("nothing here"), "nothing here");
        // A value with runs of spaces, as a page's text line shows it.
        let spaced = Scrubber::new([("sp", "two  spaces\there")]);
        assert_eq!(spaced.text("x two spaces here y"), "x {{secret:sp}} y");
    }

    #[test]
    fn the_longest_value_wins_and_short_values_are_scrubbed_too() {
        let s = Scrubber::new([("short", "abc"), ("long", "abcdef"), ("pin", "7")]);
        assert_eq!(s.text("xabcdefx abc 17"), "x{{secret:long}}x {{secret:short}} 1{{secret:pin}}");
        assert!(Scrubber::new([("empty", "")]).is_empty());
    }

    #[test]
    fn observations_and_events_are_scrubbed_everywhere_but_the_frame_origin() {
        use errand_protocol::{ElementInfo, Outcome, TaskEvent};
        let s = Scrubber::new([("pw", V)]);
        let mut obs = Observation {
            url: "https://a.example/?q=hunter+2%26%22x".into(),
            title: V.into(),
            text: format!("searched: {V}"),
            elements: vec![ElementInfo {
                name: V.into(),
                value: Some(V.into()),
                target: Some("data:text/plain,hunter%202%26%22x".into()),
                origin: Some("https://pay.example".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        obs.elements.insert(0, ElementInfo { name: "first".into(), ..Default::default() });
        obs.elements.push(ElementInfo { name: "cut hunter 2&'…".into(), ..Default::default() });
        obs.elements.push(ElementInfo { name: "last".into(), ..Default::default() });
        s.observation(&mut obs);
        assert_eq!(obs.elements[0].name, "first");
        assert_eq!(obs.elements[1].name, "{{secret:pw}}");
        assert_eq!(obs.elements[2].name, "cut {{secret:pw}}");
        assert_eq!(obs.elements[3].name, "last");
        let json = serde_json::to_string(&obs).unwrap();
        assert!(!json.contains("hunter"), "{json}");
        assert_eq!(obs.elements[1].origin.as_deref(), Some("https://pay.example"));
        let event = s.serde(TaskEvent::Finished {
            outcome: Outcome::Done { answer: format!("it is {V}"), success: true },
        });
        let json = serde_json::to_string(&event).unwrap();
        assert!(!json.contains("hunter") && json.contains("{{secret:pw}}"), "{json}");
    }
}
