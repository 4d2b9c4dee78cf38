//! Scrubbing secret values — and any part of one — out of everything that
//! leaves the host: a secret is taint, and so is each piece of it.
//!
//! A [`Scrubber`] replaces by the placeholder `{{secret:NAME}}`:
//! - every occurrence of a secret's whole value — as is, and in the forms a
//!   page or a protocol writes it in: URL-encoded (a GET form's query, a
//!   `data:` URL, a fragment: every WHATWG percent-encode set, `%20` and `+`
//!   for spaces, upper- and lower-case hex), JSON-escaped, HTML-escaped, and
//!   as the element list writes it (spaces collapsed, `"` as `'`, its start
//!   cut with `…`);
//! - every part of [`MIN_PART_CHARS`] (4) or more characters of a value at
//!   least that long, as is or as the element list writes it: a password
//!   copied into a notes field and shortened by one Backspace shows 11 of
//!   its 12 characters, and they are scrubbed;
//! - for a value that is [`mostly_digits`] (a card, an account, a phone
//!   number), any run of digits with up to [`MAX_SEPARATORS`] separators
//!   ([`digit_separator`]: spaces, dashes, dots, slashes) between two digits
//!   whose digits hold four of the value's digits in a row: `4242 4242 4242
//!   4242` for `4242424242424242`, `**** 4242`, `5678-9010` for `4000 1234
//!   5678 9010`.
//!
//! Whatever is found is merged into maximal spans (overlapping or
//! touching), each replaced by one placeholder (that of the longest thing
//! found in it). The placeholders of the scrubber's own secrets already in
//! a text are left alone, so scrubbing twice changes nothing, whatever a
//! value holds. Linear in the text whatever the number of secrets: one
//! Aho-Corasick automaton over every form of every value
//! (leftmost-longest), one DFA over every part (all matches, overlapping),
//! one pass over the text's digits with a 10,000-entry table of the
//! mostly-digit values' 4-digit parts, and a look-up before each `…`.
//! Parts of the encoded forms are not searched: `&amp` is a part of the
//! HTML form of any value with a `&`, and would mask every `&amp;`.
//!
//! The agent builds one per step ([`crate::agent`]): every value filled in
//! the task so far, and every value of a secret allowed on the page's
//! origin or on the origin of one of its frames. It is applied at the
//! entry (the observation as soon as it arrives, each action's result) and
//! again at every exit (each message to a model, each panel event, each
//! database row); the MCP tools apply theirs to every reply; the log has
//! its own, holding every secret the process has loaded ([`log_scrubber`]).
//!
//! Every value is scrubbed whole, however short: a 3-digit PIN is a secret
//! too; a value shorter than four characters only whole. The cost is that a
//! short value, or four characters of a longer one (a year among a card's
//! digits, a word in a passphrase), also masks the same characters where
//! the page — or Errand's own prompt text — shows them for another reason
//! (on the secret's own sites, or once it was filled), and that the mask
//! itself tells the model the value holds those characters.

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

/// The shortest part of a value that is scrubbed wherever it shows (a
/// value shorter than this is scrubbed only whole).
pub const MIN_PART_CHARS: usize = 4;

/// Whether a value is mostly digits (a card, an account, a phone number,
/// a PIN): at least [`MIN_PART_CHARS`] digits and at least half of its
/// characters. Its digits are then also found with separators removed or
/// put in ([`digit_separator`]).
pub fn mostly_digits(value: &str) -> bool {
    let digits = value.chars().filter(char::is_ascii_digit).count();
    digits >= MIN_PART_CHARS && 2 * digits >= value.chars().count()
}

/// What a page may put between the digits of a number it groups: spaces
/// (any Unicode space), dashes, dots, slashes.
pub fn digit_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, '-' | '.' | '/' | '\u{2010}'..='\u{2015}' | '\u{2212}')
}

/// At most this many separators between two digits of one run.
pub const MAX_SEPARATORS: usize = 3;

/// The parts of `value` every text is searched for: each run of
/// [`MIN_PART_CHARS`] characters of the value as is and as the element list
/// writes it (none for a shorter value).
fn parts(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let written = written(value);
    let quoted = written.replace('"', "'");
    for form in [value, written.as_str(), quoted.as_str()] {
        let chars: Vec<char> = form.chars().collect();
        for w in chars.windows(MIN_PART_CHARS) {
            out.push(w.iter().collect());
        }
    }
    out
}

/// Replaces secret values, and parts of them, by their placeholders.
/// Cheap to clone.
#[derive(Clone, Default)]
pub struct Scrubber {
    inner: Option<Arc<Automaton>>,
}

/// One thing found in a text: its byte range and whose it is.
#[derive(Debug, Clone, Copy)]
struct Hit {
    start: usize,
    end: usize,
    secret: u32,
}

struct Automaton {
    /// Every form of every value, leftmost-longest.
    ac: AhoCorasick,
    /// The secret (index into `placeholders`) each pattern belongs to.
    owner: Vec<u32>,
    /// Every part of every value (see [`parts`]), all matches reported
    /// (overlapping); `None` when no value is long enough to have parts.
    parts: Option<AhoCorasick>,
    /// The secret each part belongs to.
    part_owner: Vec<u32>,
    /// Finds the digits of a text, for the digit runs.
    digits: Option<AhoCorasick>,
    /// Each secret's placeholder.
    placeholders: Vec<String>,
    /// The secrets' names, to leave their placeholders alone.
    names: std::collections::HashSet<String>,
    /// For mostly-digit values: each run of four digits (as a number,
    /// 0–9999) → 1 + the secret it belongs to (0: none).
    digit_parts: Option<Vec<u32>>,
    /// Each start of each form (see [`cuts_of`]) → its secret: a value
    /// cut by the element list shows as its start and `…`. Looked up only
    /// before each `…` of a text, not searched for everywhere.
    cuts: std::collections::HashMap<String, u32>,
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
    /// The first `…` at or after `from` that ends a start of a form:
    /// `(where the start begins, where the … ends, secret)`.
    fn cut_before(&self, text: &str, from: usize) -> Option<(usize, usize, u32)> {
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
                    return Some((begin, end + ELLIPSIS.len(), *p));
                }
            }
            at = end + ELLIPSIS.len();
        }
        None
    }

    /// The placeholders of these secrets already in `text` (byte ranges,
    /// in order): never scrubbed again, whatever the values hold.
    fn placeholders_in(&self, text: &str) -> Vec<(usize, usize)> {
        const OPEN: &str = "{{secret:";
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(i) = text[at..].find(OPEN) {
            let start = at + i;
            let name_at = start + OPEN.len();
            match text[name_at..].find("}}") {
                Some(n) if self.names.contains(&text[name_at..name_at + n]) => {
                    out.push((start, name_at + n + 2));
                    at = name_at + n + 2;
                }
                _ => at = name_at,
            }
        }
        out
    }

    /// Every value, form and part in `text`, merged into maximal spans
    /// (overlapping or touching), each with the secret of its longest hit.
    fn spans(&self, text: &str) -> Vec<Hit> {
        let kept = self.placeholders_in(text);
        let free = |start: usize, end: usize| {
            // `kept` is short (the placeholders a text holds): a scan.
            !kept.iter().any(|(s, e)| start < *e && *s < end)
        };
        let mut hits: Vec<Hit> = Vec::new();
        for m in self.ac.find_iter(text) {
            if free(m.start(), m.end()) {
                let secret = self.owner[m.pattern().as_usize()];
                hits.push(Hit { start: m.start(), end: m.end(), secret });
            }
        }
        if let Some(parts) = &self.parts {
            for m in parts.find_overlapping_iter(text) {
                if free(m.start(), m.end()) {
                    let secret = self.part_owner[m.pattern().as_usize()];
                    hits.push(Hit { start: m.start(), end: m.end(), secret });
                }
            }
        }
        let mut from = 0;
        while let Some((start, end, secret)) = self.cut_before(text, from) {
            if free(start, end) {
                hits.push(Hit { start, end, secret });
            }
            from = end;
        }
        if let (Some(parts), Some(digits)) = (&self.digit_parts, &self.digits) {
            digit_hits(text, parts, digits, &mut |start, end, secret| {
                if free(start, end) {
                    hits.push(Hit { start, end, secret });
                }
            });
        }
        if hits.is_empty() {
            return hits;
        }
        hits.sort_unstable_by_key(|h| (h.start, std::cmp::Reverse(h.end)));
        let mut spans: Vec<Hit> = Vec::new();
        let mut longest = 0;
        for h in hits {
            match spans.last_mut() {
                Some(last) if h.start <= last.end => {
                    if h.end - h.start > longest {
                        longest = h.end - h.start;
                        last.secret = h.secret;
                    }
                    last.end = last.end.max(h.end);
                }
                _ => {
                    longest = h.end - h.start;
                    spans.push(h);
                }
            }
        }
        spans
    }

    /// Whether `text` holds a value, a form or a part of one.
    fn finds(&self, text: &str) -> bool {
        !self.spans(text).is_empty()
    }

    /// `text` with each span replaced; `None` when there is none.
    fn replace(&self, text: &str) -> Option<String> {
        let spans = self.spans(text);
        if spans.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for s in spans {
            out.push_str(&text[at..s.start]);
            out.push_str(&self.placeholders[s.secret as usize]);
            at = s.end;
        }
        out.push_str(&text[at..]);
        Some(out)
    }
}

/// Calls `hit(start, end, secret)` for each run of four digits of `text`
/// (ASCII digits, with at most [`MAX_SEPARATORS`] [`digit_separator`]s
/// between two of them) that `parts` knows: the byte range from its first
/// digit to its last.
fn digit_hits(
    text: &str,
    parts: &[u32],
    digits: &AhoCorasick,
    hit: &mut impl FnMut(usize, usize, u32),
) {
    // The last four digits of the current run: their values and starts.
    let bytes = text.as_bytes();
    let mut value: usize = 0;
    let mut starts = [0usize; MIN_PART_CHARS];
    let mut count = 0usize;
    let mut after_last = 0;
    for m in digits.find_iter(text) {
        let at = m.start();
        let gap = &text[after_last..at];
        // A separator is at most 3 bytes long.
        let joined = gap.is_empty()
            || (gap.len() <= 3 * MAX_SEPARATORS
                && gap.chars().count() <= MAX_SEPARATORS
                && gap.chars().all(digit_separator));
        if !joined {
            count = 0;
        }
        value = (value * 10 + usize::from(bytes[at] - b'0')) % 10_000;
        starts[count % MIN_PART_CHARS] = at;
        count += 1;
        if count >= MIN_PART_CHARS {
            let owner = parts[value];
            if owner != 0 {
                let first = starts[(count - MIN_PART_CHARS) % MIN_PART_CHARS];
                hit(first, at + 1, owner - 1);
            }
        }
        after_last = at + 1;
    }
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, c) = self.inner.as_ref().map_or((0, 0), |a| (a.owner.len(), a.cuts.len()));
        write!(f, "Scrubber({n} patterns, {c} cut starts)")
    }
}

impl Scrubber {
    /// A scrubber for these `(name, value)` pairs (empty values ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Scrubber {
        // One owner per pattern; a pattern shared by two secrets (the same
        // value under two names, a part two values share) keeps the first.
        let mut patterns: std::collections::HashMap<String, u32> = Default::default();
        let mut order: Vec<String> = Vec::new();
        let mut cuts = std::collections::HashMap::new();
        let mut placeholders: Vec<String> = Vec::new();
        let mut names = std::collections::HashSet::new();
        let mut digit_parts: Option<Vec<u32>> = None;
        let mut part_map: std::collections::HashMap<String, u32> = Default::default();
        for (name, value) in secrets {
            if value.is_empty() {
                continue;
            }
            let Ok(secret) = u32::try_from(placeholders.len()) else { break };
            placeholders.push(crate::memory::secrets::placeholder(name));
            names.insert(name.to_owned());
            for form in forms(value) {
                for cut in cuts_of(&form) {
                    cuts.entry(cut.to_owned()).or_insert(secret);
                }
                if let std::collections::hash_map::Entry::Vacant(e) = patterns.entry(form) {
                    order.push(e.key().clone());
                    e.insert(secret);
                }
            }
            for part in parts(value) {
                part_map.entry(part).or_insert(secret);
            }
            if mostly_digits(value) {
                let digits: Vec<usize> =
                    value.chars().filter_map(|c| c.to_digit(10)).map(|d| d as usize).collect();
                let table = digit_parts.get_or_insert_with(|| vec![0; 10_000]);
                for w in digits.windows(MIN_PART_CHARS) {
                    let n = w.iter().fold(0, |n, d| n * 10 + d);
                    if table[n] == 0 {
                        table[n] = secret + 1;
                    }
                }
            }
        }
        if order.is_empty() {
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
        // Standard semantics: every part found, overlapping; the spans are
        // merged afterwards.
        let (part_keys, part_owner): (Vec<String>, Vec<u32>) = part_map.into_iter().unzip();
        let parts = if part_keys.is_empty() {
            None
        } else {
            // A DFA: the parts have no rare byte to skip to, so the text is
            // read byte by byte, and a DFA's step is the cheapest.
            let built = AhoCorasickBuilder::new()
                .match_kind(MatchKind::Standard)
                .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                .build(&part_keys);
            match built {
                Ok(ac) => Some(ac),
                Err(e) => {
                    tracing::error!("cannot build the secret scrubber's automaton of parts: {e}");
                    AhoCorasickBuilder::new()
                        .kind(Some(aho_corasick::AhoCorasickKind::NoncontiguousNFA))
                        .build(&part_keys)
                        .ok()
                }
            }
        };
        let digits = digit_parts.as_ref().and_then(|_| {
            AhoCorasick::new(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]).ok()
        });
        let owner: Vec<u32> = order.iter().map(|p| patterns[p]).collect();
        let ac = AhoCorasickBuilder::new().match_kind(MatchKind::LeftmostLongest).build(&order);
        let ac = match ac {
            Ok(ac) => ac,
            Err(e) => {
                // Only a pattern set too large for the default automaton
                // gets here (4 KB values, thousands of secrets).
                tracing::error!("cannot build the secret scrubber's automaton: {e}");
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .kind(Some(aho_corasick::AhoCorasickKind::NoncontiguousNFA))
                    .build(&order)
                    .expect("a noncontiguous NFA takes any pattern set")
            }
        };
        let automaton = Automaton {
            ac,
            owner,
            parts,
            part_owner,
            digits,
            placeholders,
            names,
            digit_parts,
            cuts,
            longest_cut,
            cut_heads,
            cut_pairs,
        };
        Scrubber { inner: Some(Arc::new(automaton)) }
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    /// Whether `text` holds any form of a value, or a part of one.
    pub fn finds(&self, text: &str) -> bool {
        self.inner.as_ref().is_some_and(|a| a.finds(text))
    }

    /// `text` with every form of every value, and every part of one,
    /// replaced by its placeholder.
    pub fn text(&self, text: &str) -> String {
        match &self.inner {
            Some(a) => a.replace(text).unwrap_or_else(|| text.to_owned()),
            None => text.to_owned(),
        }
    }

    /// [`Scrubber::text`] in place.
    pub fn string(&self, text: &mut String) {
        if let Some(out) = self.inner.as_ref().and_then(|a| a.replace(text)) {
            *text = out;
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
        let hits: Vec<usize> =
            a.spans(&joined).iter().flat_map(|h| [h.start, h.end.saturating_sub(1)]).collect();
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
            if let Some(out) = a.replace(s) {
                *s = out;
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

    #[test]
    fn a_password_with_one_character_deleted_is_still_scrubbed() {
        // Filled, copied into a plain field, one Backspace: 11 of 12.
        let s = Scrubber::new([("pw", "Tr0ub4dor&3x")]);
        for shown in ["Tr0ub4dor&3", "r0ub4dor&3x", "Tr0ub4dor3x", "Notes: Tr0ub4dor&3 (draft)"] {
            let out = s.text(shown);
            assert!(out.contains("{{secret:pw}}"), "{shown} → {out}");
            for w in ["Tr0u", "ub4d", "dor&", "or&3"] {
                assert!(!out.contains(w), "{shown} → {out}");
            }
        }
        // A part of four characters is a part; three are not.
        assert_eq!(s.text("the 4dor here"), "the {{secret:pw}} here");
        assert_eq!(s.text("Tr0 and ub4 and &3x"), "Tr0 and ub4 and &3x");
        // Two parts next to each other are one span, one placeholder.
        assert_eq!(s.text("x Tr0ub4dor&3x x"), "x {{secret:pw}} x");
    }

    #[test]
    fn a_card_number_is_scrubbed_however_the_page_groups_it() {
        let s = Scrubber::new([("card", "4242424242424242")]);
        for shown in [
            "4242 4242 4242 4242",
            "4242-4242-4242-4242",
            "4242.4242.4242.4242",
            "42 42 42 42 42 42 42 42",
            "4242\u{a0}4242\u{2009}4242 4242",
            "card ending 4242",
            "**** **** **** 4242",
            "4 2 4 2",
            "24 / 24",
        ] {
            let out = s.text(&format!("[3]<input value=\"{shown}\">"));
            assert!(out.contains("{{secret:card}}"), "{shown} → {out}");
            let digits: String = out.chars().filter(char::is_ascii_digit).collect();
            assert!(digits.len() < 4, "{shown} → {out}");
        }
        // A grouped value is found ungrouped, and grouped otherwise.
        let g = Scrubber::new([("card", "4000 1234 5678 9010")]);
        for shown in ["4000123456789010", "4000-1234-5678-9010", "5678 9010", "12345"] {
            let out = g.text(shown);
            assert!(out.contains("{{secret:card}}") && !out.contains("5678"), "{shown} → {out}");
        }
        // Digits the value does not hold in that order stay.
        assert_eq!(g.text("Order 1111, 2 items, 3 €"), "Order 1111, 2 items, 3 €");
        // Too many separators apart: two numbers, not one.
        assert_eq!(g.text("40 -  -  00"), "40 -  -  00");
        // Not mostly digits: no digit runs, only parts as they are.
        let p = Scrubber::new([("pw", "hunter2024!")]);
        assert_eq!(p.text("2 0 2 4"), "2 0 2 4");
        assert_eq!(p.text("in 2024!"), "in {{secret:pw}}");
    }

    #[test]
    fn short_values_are_matched_whole_and_placeholders_are_left_alone() {
        let s = Scrubber::new([("pin", "123"), ("cret", "cret"), ("pw", "secret:p")]);
        assert_eq!(s.text("12 and 123"), "12 and {{secret:pin}}");
        // Scrubbing twice changes nothing, even when a value is in a
        // placeholder's text.
        let once = s.text("a secret:pw, cret and {{secret:pin}} {{secret:cret}}");
        assert_eq!(once, "a {{secret:pw}}w, {{secret:cret}} and {{secret:pin}} {{secret:cret}}");
        assert_eq!(s.text(&once), once);
        // A placeholder of a name this scrubber does not know is text.
        assert_ne!(s.text("{{secret:xcretx}}"), "{{secret:xcretx}}");
    }

    mod property {
        use super::super::*;
        use proptest::prelude::*;

        /// A secret: letters, digits, letters and digits, or grouped digits.
        fn secret() -> impl Strategy<Value = String> {
            prop_oneof![
                "[a-zA-Z]{4,16}",
                "[0-9]{4,16}",
                "[a-z0-9]{4,16}",
                proptest::collection::vec("[0-9]{4}", 2..5).prop_flat_map(|groups| {
                    prop_oneof![Just(" "), Just("-")].prop_map(move |sep| groups.join(sep))
                }),
            ]
        }

        /// A random part (at least four characters) of one of `secrets`,
        /// with random separators between the digits of a mostly-digit one.
        fn piece(secrets: Vec<String>) -> impl Strategy<Value = String> {
            (
                0..secrets.len(),
                any::<prop::sample::Index>(),
                any::<prop::sample::Index>(),
                proptest::collection::vec(
                    (0..4usize, prop_oneof![Just(' '), Just('-'), Just('.'), Just('/')]),
                    20,
                ),
            )
                .prop_map(move |(i, a, b, seps)| {
                    let digit = mostly_digits(&secrets[i]);
                    let chars: Vec<char> = if digit {
                        secrets[i].chars().filter(char::is_ascii_digit).collect()
                    } else {
                        secrets[i].chars().collect()
                    };
                    let len = 4 + b.index(chars.len() - 3);
                    let start = a.index(chars.len() - len + 1);
                    let part = &chars[start..start + len];
                    if !digit {
                        return part.iter().collect();
                    }
                    let mut out = String::new();
                    for (n, d) in part.iter().enumerate() {
                        out.push(*d);
                        if n + 1 < part.len() {
                            let (count, sep) = seps[n % seps.len()];
                            out.extend(std::iter::repeat_n(sep, count));
                        }
                    }
                    out
                })
        }

        /// The text between the placeholders of `names`.
        fn segments<'a>(text: &'a str, names: &[String]) -> Vec<&'a str> {
            let mut cuts = vec![text];
            for n in names {
                let p = format!("{{{{secret:{n}}}}}");
                cuts = cuts
                    .into_iter()
                    .flat_map(|c| c.split(p.as_str()).collect::<Vec<_>>())
                    .collect();
            }
            cuts
        }

        /// Whether `text` holds secret material, by the plain definition:
        /// four characters of a value in a row; for a mostly-digit value,
        /// four of its digits in a row in a run of digits with at most
        /// three separators (space, `-`, `.`, `/`) between two digits.
        fn material(text: &str, secrets: &[String]) -> bool {
            secrets.iter().any(|s| {
                let chars: Vec<char> = s.chars().collect();
                let parts = chars.windows(4).any(|w| text.contains(&w.iter().collect::<String>()));
                if parts || !mostly_digits(s) {
                    return parts;
                }
                let digits: String = s.chars().filter(char::is_ascii_digit).collect();
                // Each run's digits.
                let mut runs: Vec<String> = vec![String::new()];
                let mut gap = 0;
                for c in text.chars() {
                    if c.is_ascii_digit() {
                        if gap > 3 {
                            runs.push(String::new());
                        }
                        runs.last_mut().unwrap().push(c);
                        gap = 0;
                    } else if " -./".contains(c) && !runs.last().unwrap().is_empty() {
                        gap += 1;
                    } else {
                        runs.push(String::new());
                        gap = 0;
                    }
                }
                runs.iter().any(|r| {
                    (0..digits.len().saturating_sub(3)).any(|i| r.contains(&digits[i..i + 4]))
                })
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]

            #[test]
            fn no_part_of_a_secret_survives(
                (secrets, pieces, around) in proptest::collection::vec(secret(), 1..4)
                    .prop_flat_map(|secrets| {
                        let pieces = proptest::collection::vec(piece(secrets.clone()), 1..5);
                        (Just(secrets), pieces, proptest::collection::vec("[a-zA-Z0-9 ,.:;!?()-]{0,12}", 6))
                    })
            ) {
                let names: Vec<String> = (0..secrets.len()).map(|i| format!("s{i}")).collect();
                let s = Scrubber::new(names.iter().map(String::as_str).zip(secrets.iter().map(String::as_str)));
                let mut text = around[5].clone();
                for (i, p) in pieces.iter().enumerate() {
                    text.push_str(p);
                    text.push_str(&around[i]);
                }
                let out = s.text(&text);
                for segment in segments(&out, &names) {
                    prop_assert!(!material(segment, &secrets), "{text:?} → {out:?}");
                }
                prop_assert!(out.contains("{{secret:"), "{text:?} → {out:?}");
                prop_assert_eq!(s.text(&out), out.clone(), "scrubbing twice changes nothing");
            }

            #[test]
            fn text_without_secret_material_is_unchanged(
                secrets in proptest::collection::vec("[a-c0-2]{4,8}|[0-2]{2} [0-2]{2}", 1..3),
                text in "[a-d0-3 ./-]{0,40}",
            ) {
                let names: Vec<String> = (0..secrets.len()).map(|i| format!("s{i}")).collect();
                let s = Scrubber::new(names.iter().map(String::as_str).zip(secrets.iter().map(String::as_str)));
                if material(&text, &secrets) {
                    prop_assert!(s.finds(&text), "{text:?} holds material of {secrets:?}");
                } else {
                    prop_assert_eq!(s.text(&text), text.clone(), "{:?}", secrets);
                }
            }
        }
    }
}
