//! The field-name benchmark (issue 38): on a labelled set of real forms —
//! the form pages of `../shared/corpus/` and the forms written from real
//! sites' patterns in `tests/fixtures/forms/` — the share of fields Errand
//! names with the label a person reads.
//!
//! ```text
//! bash scripts/build-extension.sh && cargo build -p errand-host
//! cargo run --release -p errand-e2e --example bench_labels
//! BENCH_EXTENSION_DIR=<another unpacked build> cargo run --release -p errand-e2e --example bench_labels
//! ```
//!
//! The expected names are in `tests/fixtures/forms/labels.tsv` (page, a CSS
//! selector of the listed element, the label), written by hand. A field
//! counts when the name written in its line (`5<input="Day Phone, part 1
//! of 3">`, else the text of its line; with its kind: `<email>`) holds
//! every word of its label,
//! case-insensitive; a field that is not listed counts as missed. Pages are
//! opened as `bench_observe` opens them. Prints a markdown table and every
//! miss (to stderr); writes `target/bench/labels.json`.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use errand_e2e::browser::{LaunchOptions, TestBrowser, repo_root};
use errand_e2e::cdp::Page;
use errand_e2e::content::ContentScript;
use errand_e2e::fixtures::{FixtureServer, fixtures_dir};
use serde_json::{Value, json};

fn main() -> Result<()> {
    let root = repo_root();
    let table = std::fs::read_to_string(fixtures_dir().join("forms/labels.tsv"))
        .context("reading tests/fixtures/forms/labels.tsv")?;
    // page → [(selector, expected)], in the file's order.
    let mut pages: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for line in table.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if let [page, selector, expected] = cols[..] {
            pages.entry(page.to_owned()).or_default().push((selector.into(), expected.into()));
        }
    }
    if let Ok(only) = std::env::var("ERRAND_BENCH_PAGES") {
        let only: Vec<&str> = only.split(',').collect();
        pages.retain(|p, _| only.iter().any(|o| p.contains(o)));
    }
    let fixtures = FixtureServer::start()?;
    let corpus = FixtureServer::start_in(root.join("../shared/corpus"))?;
    let url = |page: &str| match page.strip_prefix("corpus/") {
        Some(rest) => corpus.url(rest),
        None => fixtures.url(page),
    };
    let browser =
        TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1").with_bench_env())?;
    // `-- --dump PAGE…` prints each listed field of the pages with a
    // selector for it (to write the labels file by hand), nothing else.
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--dump") {
        for page in &args[i + 1..] {
            dump(&browser, &url(page), page)?;
        }
        return Ok(());
    }
    let (mut named, mut total) = (0usize, 0usize);
    let mut rows = Vec::new();
    let mut misses = Vec::new();
    for (page, fields) in &pages {
        let tab = open(&browser, &url(page))?;
        let cs = ContentScript::of(&browser, &tab)?;
        let o = cs.observe_full(false)?;
        let mut hits = 0;
        for (selector, expected) in fields {
            let line = line_of(&tab, &o, selector)?;
            let name = line.as_deref().map(name_in).unwrap_or_default();
            if says(&name, expected) {
                hits += 1;
            } else {
                misses.push(json!({"page": page, "selector": selector, "expected": expected,
                    "line": line}));
                eprintln!(
                    "miss {page} {selector}: want {expected:?}, got {}",
                    line.as_deref().unwrap_or("(not listed)")
                );
            }
        }
        named += hits;
        total += fields.len();
        rows.push(json!({"page": page, "fields": fields.len(), "named": hits}));
        let _ = browser.cdp().call("Target.closeTarget", json!({"targetId": tab.target_id}), None);
    }
    let share = named as f64 / total.max(1) as f64;
    let out_dir = root.join("target/bench");
    std::fs::create_dir_all(&out_dir)?;
    std::fs::write(
        out_dir.join("labels.json"),
        serde_json::to_string_pretty(
            &json!({"named": named, "fields": total, "share": share, "pages": rows, "misses": misses}),
        )?,
    )?;
    println!("| page | fields | named with their label |\n|---|---:|---:|");
    for r in &rows {
        println!("| {} | {} | {} |", r["page"].as_str().unwrap_or("?"), r["fields"], r["named"]);
    }
    println!("| **all** ({} pages) | {total} | {named} ({:.1} %) |", rows.len(), share * 100.0);
    Ok(())
}

/// Opens a tab and waits for its document (not for every subresource: a
/// saved page may wait long for hosts it cannot reach).
fn open(browser: &TestBrowser, url: &str) -> Result<Page> {
    let tab = browser.cdp().new_page(url)?;
    tab.wait_for(
        "document.readyState !== 'loading' && location.href !== 'about:blank'",
        Duration::from_secs(60),
    )?;
    Ok(tab)
}

/// The observation's line of the element `selector` finds (matched by its
/// box: the observation's rectangles are the page's viewport pixels).
fn line_of(tab: &Page, o: &errand_protocol::Observation, selector: &str) -> Result<Option<String>> {
    let js = format!(
        "(() => {{ const e = document.querySelector({}); if (!e) return null; \
           const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }})()",
        serde_json::to_string(selector)?
    );
    let rect = tab.eval(&js)?;
    let Some(r) = rect.as_array().map(|a| a.iter().filter_map(Value::as_f64).collect::<Vec<_>>())
    else {
        eprintln!("no element {selector}");
        return Ok(None);
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1.5;
    let Some(e) = o.elements.iter().find(|e| {
        close(e.rect.x, r[0])
            && close(e.rect.y, r[1])
            && close(e.rect.width, r[2])
            && close(e.rect.height, r[3])
    }) else {
        return Ok(None);
    };
    let n = e.index.to_string();
    Ok(o.text.lines().map(str::trim_start).find_map(|l| {
        let l = l.strip_prefix('*').unwrap_or(l);
        l.strip_prefix(n.as_str()).filter(|rest| rest.starts_with(['<', '>'])).map(str::to_owned)
    }))
}

/// The name a line writes: `=name` after the kind, else its text; with
/// the kind, which says the name when they are the same (`<email>`, whose
/// label is "Email", is written without it).
fn name_in(line: &str) -> String {
    let kind = line.trim_start_matches('<').split(['=', '>', ' ']).next().unwrap_or_default();
    let name = match errand_e2e::model::tag_name(line) {
        Some(n) => n,
        None => line.split_once('>').map(|(_, t)| t.to_owned()).unwrap_or_default(),
    };
    format!("{kind} {name}")
}

/// Whether `name` holds every word of `label` (letters and digits, any
/// case; a word of a script without spaces is matched inside words).
fn says(name: &str, label: &str) -> bool {
    let words = |t: &str| -> Vec<String> {
        t.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let have = words(name).join(" ");
    let have_words: Vec<String> = words(name);
    // (`E-Mail` is said by `<email>`: letters and digits only.)
    let bare = |t: &str| words(t).concat();
    words(label)
        .iter()
        .all(|w| have_words.contains(w) || (!w.is_ascii() && have.contains(w.as_str())))
        || have_words.contains(&bare(label))
}

/// Prints `page<TAB>selector<TAB>line` for every field the page lists.
fn dump(browser: &TestBrowser, url: &str, page: &str) -> Result<()> {
    let tab = open(browser, url)?;
    let cs = ContentScript::of(browser, &tab)?;
    let o = cs.observe_full(false)?;
    let found = tab.eval(
        "(() => { const out = []; const one = (s) => { try { return document.querySelectorAll(s).length === 1; } catch (e) { return false; } };
           for (const e of document.querySelectorAll('input, select, textarea, [contenteditable], label')) {
             let s = null;
             if (e.id && one('#' + CSS.escape(e.id))) s = '#' + CSS.escape(e.id);
             else if (e.name && one(e.localName + '[name=\"' + e.name + '\"]')) s = e.localName + '[name=\"' + e.name + '\"]';
             if (!s) continue;
             const r = e.getBoundingClientRect(); out.push([s, r.x, r.y, r.width, r.height]); }
           return out; })()",
    )?;
    for f in found.as_array().into_iter().flatten() {
        let s = f[0].as_str().unwrap_or_default();
        let line = line_of(&tab, &o, s)?;
        if let Some(l) = line.filter(|l| !l.starts_with("<label") || l.starts_with("<label role")) {
            let kind = l.split(['=', '>', ' ']).next().unwrap_or_default();
            if !matches!(kind, "<button" | "<a") {
                println!("{page}\t{s}\t{l}");
            }
        }
    }
    Ok(())
}
