//! The observation benchmark: Errand's content script against browser-use's
//! in-page indexer (`buildDomTree.js`, 0.5.11) in the same Chromium run, on
//! the same pages — every page of `../shared/corpus/` and generated pages of
//! 1k, 10k and 50k elements.
//!
//! ```text
//! bash scripts/build-extension.sh && cargo build -p errand-host
//! cargo run --release -p errand-e2e --example bench_observe [-- --quick]
//! ```
//!
//! Writes `target/bench/observe.json` and `target/bench/observe.png` (time
//! against page size), and prints a markdown table. The reference file is
//! downloaded into `.tools/` (`pip download --no-deps browser-use==0.5.11`),
//! never committed. Timings are medians after one warm-up run; the
//! reference's slow modes run fewer times (the count is in the JSON).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use errand_e2e::browser::{LaunchOptions, TestBrowser, repo_root};
use errand_e2e::cdp::Page;
use errand_e2e::content::ContentScript;
use errand_e2e::fixtures::FixtureServer;
use serde_json::{Value, json};

const REPS: usize = 10;
/// A reference run slower than this is not repeated.
const SLOW_MS: f64 = 4000.0;
/// A reference mode is not tried on a page bigger than this once it took
/// longer than [`GIVE_UP_MS`] on a smaller one.
const GIVE_UP_MS: f64 = 60_000.0;

fn main() -> Result<()> {
    // `-- --count FILE…` prints the o200k tokens of each file (to weigh a
    // format change against the texts written by `ERRAND_BENCH_TEXTS=1`).
    let args: Vec<String> = std::env::args().collect();
    if let Some(files) = args.iter().position(|a| a == "--count").map(|i| &args[i + 1..]) {
        use std::io::Write;
        let bpe = tiktoken_rs::o200k_base()?;
        let mut out = std::io::stdout().lock();
        for file in files {
            let text = std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
            let ids = bpe.encode_with_special_tokens(&text);
            writeln!(out, "{}\t{file}", ids.len())?;
            if std::env::var("ERRAND_BENCH_SHOW_TOKENS").is_ok() {
                let parts: Vec<String> =
                    ids.iter().map(|t| bpe.decode(vec![*t]).unwrap_or_default()).collect();
                writeln!(out, "{parts:?}")?;
            }
        }
        return Ok(());
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let root = repo_root();
    let out_dir = root.join("target/bench");
    std::fs::create_dir_all(out_dir.join("pages"))?;
    let reference = reference_js(&root)?;

    // Pages: the corpus and the generated ones.
    let corpus_dir = root.join("../shared/corpus");
    let manifest = std::fs::read_to_string(corpus_dir.join("MANIFEST.tsv"))
        .context("reading ../shared/corpus/MANIFEST.tsv")?;
    let mut pages: Vec<(String, String, Option<BTreeSet<String>>)> = Vec::new();
    for line in manifest.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() >= 5 {
            pages.push((cols[0].to_owned(), format!("c/{}", cols[4]), None));
        }
    }
    if quick {
        pages.truncate(3);
    }
    let sizes: &[usize] = if quick { &[1_000, 10_000] } else { &[1_000, 10_000, 50_000] };
    for &n in sizes {
        let (html, want) = generated_page(n);
        let name = format!("gen-{}k.html", n / 1000);
        std::fs::write(out_dir.join("pages").join(&name), html)?;
        pages.push((format!("generated-{}k", n / 1000), format!("g/{name}"), Some(want)));
    }

    // `ERRAND_BENCH_PAGES=a,b` runs only those pages; `ERRAND_BENCH_NO_REFERENCE=1`
    // times Errand alone (for re-running a size whose reference runs take minutes).
    if let Ok(only) = std::env::var("ERRAND_BENCH_PAGES") {
        let only: Vec<&str> = only.split(',').collect();
        pages.retain(|(id, _, _)| only.contains(&id.as_str()));
    }
    let no_reference = std::env::var("ERRAND_BENCH_NO_REFERENCE").is_ok_and(|v| v == "1");
    // `ERRAND_BENCH_TOKENS_ONLY=1` takes one observation per page (WASM
    // build, no marks) and one reference run per mode without overlays: the
    // token and recall figures without the timing repeats.
    let tokens_only = std::env::var("ERRAND_BENCH_TOKENS_ONLY").is_ok_and(|v| v == "1");
    // `ERRAND_BENCH_WASM_ONLY=1` leaves the JS build's columns out.
    let wasm_only = std::env::var("ERRAND_BENCH_WASM_ONLY").is_ok_and(|v| v == "1");
    // `ERRAND_BENCH_TEXTS=1` writes both model-facing texts of every page
    // into `target/bench/texts/` (`PAGE.errand.txt`, `PAGE.ref-page.txt`,
    // `PAGE.ref-viewport.txt`) to compare them side by side.
    let texts_dir =
        std::env::var("ERRAND_BENCH_TEXTS").is_ok_and(|v| v == "1").then(|| out_dir.join("texts"));
    if let Some(dir) = &texts_dir {
        std::fs::create_dir_all(dir)?;
    }
    let corpus = FixtureServer::start_in(corpus_dir)?;
    let generated = FixtureServer::start_in(out_dir.join("pages"))?;
    let url = |path: &str, csp: bool| {
        let (server, rest) = match path.split_once('/') {
            Some(("c", rest)) => (&corpus, rest),
            Some((_, rest)) => (&generated, rest),
            None => unreachable!(),
        };
        server.url(&format!("{}{rest}", if csp { "csp/" } else { "" }))
    };

    // (`BENCH_EXTENSION_DIR` runs another build: main's, for a before/after.)
    let browser =
        TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1").with_bench_env())?;
    let bpe = tiktoken_rs::o200k_base()?;
    let tokens = |t: &str| bpe.encode_with_special_tokens(t).len();

    let mut results = Vec::new();
    let mut ref_gave_up: [Option<u64>; 4] = [None; 4];
    for (id, path, want) in &pages {
        eprintln!("== {id}");
        let mut row = json!({"page": id});
        let mut one_page = || -> Result<()> {
            // Errand, both builds (the JS build on the same page under a CSP
            // that refuses WebAssembly).
            let builds: &[(&str, bool)] = if tokens_only || wasm_only {
                &[("wasm", false)]
            } else {
                &[("wasm", false), ("js", true)]
            };
            for &(build, csp) in builds {
                let tab = open(&browser, &url(path, csp))?;
                let cs = ContentScript::of(&browser, &tab)?;
                let t = Instant::now();
                let first = cs.observe(false)?;
                let first_ms = t.elapsed().as_secs_f64() * 1000.0;
                // A saved page may carry its own CSP (a `<meta>`): then the JS
                // build runs in both columns, and the JSON says so.
                row[&format!("errand_{build}_ran")] = json!(build_name(&first));
                let elements = tab.eval("document.getElementsByTagName('*').length")?;
                row["elements"] = elements;
                let (marks_modes, reps): (&[bool], usize) =
                    if tokens_only { (&[false], 1) } else { (&[false, true], REPS) };
                for &marks in marks_modes {
                    let mut times = Vec::new();
                    let mut last = None;
                    for _ in 0..reps {
                        let o = cs.observe_full(marks)?;
                        times.push(o.elapsed_ms);
                        last = Some(o);
                    }
                    let o = last.unwrap();
                    let key = format!("errand_{build}_{}", if marks { "marks" } else { "plain" });
                    record(&mut row, &key, &times);
                    if !marks && build == "wasm" {
                        row["errand_listed"] = json!(o.elements.len());
                        row["errand_tokens"] = json!(tokens(&o.text));
                        row["errand_chars"] = json!(o.text.len());
                        if let Some(dir) = &texts_dir {
                            std::fs::write(dir.join(format!("{id}.errand.txt")), &o.text)?;
                        }
                        if let Some(want) = want {
                            let found: BTreeSet<String> =
                                o.elements.iter().map(|e| e.name.clone()).collect();
                            let (r, p) = recall_precision(want, &found);
                            row["errand_recall"] = json!(r);
                            row["errand_precision"] = json!(p);
                        }
                    }
                }
                if tokens_only {
                    close(&browser, &tab);
                    continue;
                }
                // Re-observation after one element changed (incremental when the
                // change moved nothing), checked against a whole-page one. Asked as
                // the host asks (`since` the observation it holds), the reply is a
                // diff; the same re-observations asked without it come whole. Both
                // timed from the driver too (messaging included).
                let mut times = Vec::new();
                let mut reread = 0;
                let (mut trips_diff, mut trips_whole) = (Vec::new(), Vec::new());
                let (mut bytes_diff, mut bytes_whole) = (Vec::new(), Vec::new());
                let change = |label: String| {
                    tab.eval(&format!(
                    "(() => {{ const b = document.querySelector('button, a, input'); if (b) b.setAttribute('aria-label', '{label}'); return 0; }})()"
                ))
                };
                // Why re-observations walked the whole page, each reason once.
                let mut fallbacks: BTreeSet<String> = BTreeSet::new();
                let mut held = cs.observe(false)?;
                for i in 0..REPS {
                    change(format!("changed {i}"))?;
                    let t = Instant::now();
                    let sent = cs.observe_since(false, held.seq)?;
                    trips_diff.push(t.elapsed().as_secs_f64() * 1000.0);
                    bytes_diff.push(serde_json::to_string(&sent)?.len() as f64);
                    times.push(sent.elapsed_ms);
                    reread += usize::from(sent.reobserved.is_some());
                    fallbacks.extend(sent.fallback.clone());
                    held = sent.resolve(Some(&held)).context("the diff does not fit")?;
                }
                let full = cs.observe_full(false)?;
                let last = held;
                let unstarred = |t: &str| {
                    t.lines()
                        .map(|l| l.strip_prefix('*').unwrap_or(l))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                let same = last.elements == full.elements
                    && unstarred(&last.text) == unstarred(&full.text);
                if !same {
                    eprintln!("   {id} ({build}): the re-observation differs from a full one");
                }
                for i in 0..REPS {
                    change(format!("again {i}"))?;
                    let t = Instant::now();
                    let whole = cs.observe(false)?;
                    trips_whole.push(t.elapsed().as_secs_f64() * 1000.0);
                    bytes_whole.push(serde_json::to_string(&whole)?.len() as f64);
                }
                record(&mut row, &format!("errand_{build}_after_change"), &times);
                record(&mut row, &format!("errand_{build}_change_trip_diff"), &trips_diff);
                record(&mut row, &format!("errand_{build}_change_trip_whole"), &trips_whole);
                record(&mut row, &format!("errand_{build}_change_bytes_diff"), &bytes_diff);
                record(&mut row, &format!("errand_{build}_change_bytes_whole"), &bytes_whole);
                row[&format!("errand_{build}_incremental_runs")] = json!(reread);
                row[&format!("errand_{build}_fallbacks")] = json!(fallbacks);
                if !fallbacks.is_empty() {
                    eprintln!("   {id} ({build}): walked whole: {fallbacks:?}");
                }
                row[&format!("errand_{build}_incremental_equal")] = json!(same);
                row[&format!("errand_{build}_first_roundtrip")] = json!(first_ms);
                cs.command(json!({"op": "cleanup"}))?;
                close(&browser, &tab);
            }

            // The reference: viewport (500) and whole page (-1), overlays on and off.
            if no_reference {
                return Ok(());
            }
            let tab = open(&browser, &url(path, false))?;
            let size = row["elements"].as_u64().unwrap_or(0);
            install_reference(&tab, &reference)?;
            for (k, (expansion, overlays)) in
                [(500, false), (500, true), (-1, false), (-1, true)].into_iter().enumerate()
            {
                let key = format!(
                    "ref_{}_{}",
                    if expansion < 0 { "page" } else { "viewport" },
                    if overlays { "marks" } else { "plain" }
                );
                if tokens_only && overlays {
                    continue;
                }
                if ref_gave_up[k].is_some_and(|n| size > n) {
                    // It took over a minute on a smaller page already.
                    row[&key] = Value::Null;
                    continue;
                }
                let mut times = Vec::new();
                let first = run_reference(&tab, expansion, overlays, true)?;
                let first_ms = first["ms"].as_f64().unwrap_or(0.0);
                let mut reps = 0;
                if tokens_only {
                    times.push(first_ms);
                    reps = 1;
                } else if first_ms < SLOW_MS {
                    for _ in 0..REPS {
                        times.push(
                            run_reference(&tab, expansion, overlays, false)?["ms"]
                                .as_f64()
                                .unwrap_or(0.0),
                        );
                        reps += 1;
                    }
                } else {
                    times.push(first_ms);
                    reps = 1;
                }
                if first_ms > GIVE_UP_MS && ref_gave_up[k].is_none_or(|n| size < n) {
                    ref_gave_up[k] = Some(size);
                }
                record(&mut row, &key, &times);
                row[&format!("{key}_runs")] = json!(reps);
                if !overlays {
                    let text = first["text"].as_str().unwrap_or_default();
                    let which = if expansion < 0 { "page" } else { "viewport" };
                    row[&format!("ref_{which}_tokens")] = json!(tokens(text));
                    if let Some(dir) = &texts_dir {
                        std::fs::write(dir.join(format!("{id}.ref-{which}.txt")), text)?;
                    }
                    row[&format!("ref_{which}_listed")] = first["count"].clone();
                    if let Some(want) = want {
                        let found: BTreeSet<String> = first["labels"]
                            .as_array()
                            .map(|a| {
                                a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
                            })
                            .unwrap_or_default();
                        let (r, p) = recall_precision(want, &found);
                        row[&format!("ref_{which}_recall")] = json!(r);
                        row[&format!("ref_{which}_precision")] = json!(p);
                    }
                }
                eprintln!("   {key}: {:.1} ms ({reps} runs)", row[&key].as_f64().unwrap_or(0.0));
            }
            close(&browser, &tab);
            Ok(())
        };
        if let Err(e) = one_page() {
            eprintln!("   {id}: {e:#}");
            row["error"] = json!(format!("{e:#}"));
        }
        eprintln!("   {row}");
        results.push(row);
        std::fs::write(
            out_dir.join("observe.partial.json"),
            serde_json::to_string_pretty(&results)?,
        )?;
    }

    let report = json!({
        "chromium": browser.cdp().call("Browser.getVersion", json!({}), None)?["product"],
        "reference": "browser-use 0.5.11 browser_use/dom/dom_tree/index.js",
        "reps": REPS,
        "pages": results,
    });
    // A tokens-only run does not overwrite the full run's figures.
    let json_path = out_dir.join(if tokens_only { "observe.tokens.json" } else { "observe.json" });
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)?)?;
    drop(browser);
    // The table is the command's output (stdout), for BENCHMARKS.md.
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        if tokens_only {
            writeln!(out, "{}", token_table(&results))?;
            eprintln!("wrote {}", json_path.display());
            return Ok(());
        }
        writeln!(out, "{}", table(&results))?;
    }
    plot(&root, &json_path, &out_dir.join("observe.png"))?;
    eprintln!("wrote {} and {}", json_path.display(), out_dir.join("observe.png").display());
    Ok(())
}

fn build_name(o: &errand_protocol::Observation) -> &'static str {
    match o.build {
        Some(errand_protocol::Build::Wasm) => "wasm",
        Some(errand_protocol::Build::Js) => "js",
        None => "?",
    }
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

fn close(browser: &TestBrowser, tab: &Page) {
    let _ = browser.cdp().call("Target.closeTarget", json!({"targetId": tab.target_id}), None);
}

/// Records a sample's median as `<key>`, its spread as `<key>_p10`, `<key>_p90`.
fn record(row: &mut Value, key: &str, times: &[f64]) {
    let s = errand_e2e::stats::Summary::of(times);
    row[key] = json!(s.median);
    row[&format!("{key}_p10")] = json!(s.p10);
    row[&format!("{key}_p90")] = json!(s.p90);
}

fn recall_precision(want: &BTreeSet<String>, found: &BTreeSet<String>) -> (f64, f64) {
    let hit = want.intersection(found).count() as f64;
    let recall = hit / want.len().max(1) as f64;
    // Anything listed that is not wanted counts against precision (the
    // generated pages have nothing else a person could use).
    let precision = hit / found.len().max(1) as f64;
    (recall, precision)
}

/// A page of `n` elements in rows of ten: per row a button, a link and an
/// input a person would use (the wanted ones, labelled `wN…`), a hidden
/// button, and six plain elements with text.
fn generated_page(n: usize) -> (String, BTreeSet<String>) {
    let rows = n / 10;
    let want = (0..rows).flat_map(|i| ["b", "a", "i"].map(|s| format!("w{i}{s}"))).collect();
    (errand_e2e::fixtures::generated_page(rows), want)
}

/// The reference's source, downloaded into `.tools/` when missing.
fn reference_js(root: &Path) -> Result<String> {
    let js = root.join(".tools/browser-use-0.5.11/index.js");
    if !js.is_file() {
        let dl = root.join(".tools/pip");
        std::fs::create_dir_all(&dl)?;
        let wheel = dl.join("browser_use-0.5.11-py3-none-any.whl");
        if !wheel.is_file() {
            eprintln!("downloading browser-use 0.5.11 from PyPI into .tools/pip");
            let ok = Command::new("pip")
                .args(["download", "--no-deps", "browser-use==0.5.11", "-d"])
                .arg(&dl)
                .status()
                .context("running pip")?
                .success();
            if !ok {
                bail!("pip download --no-deps browser-use==0.5.11 failed");
            }
        }
        std::fs::create_dir_all(js.parent().unwrap())?;
        let ok = Command::new("python3")
            .arg("-c")
            .arg(
                "import sys, zipfile; open(sys.argv[2], 'wb').write(\
                 zipfile.ZipFile(sys.argv[1]).read('browser_use/dom/dom_tree/index.js'))",
            )
            .arg(&wheel)
            .arg(&js)
            .status()?
            .success();
        if !ok {
            bail!("cannot extract index.js from {}", wheel.display());
        }
    }
    Ok(std::fs::read_to_string(js)?)
}

/// Defines `window.__bdt` (the reference) and `window.__bdtText` (its
/// element list as browser-use writes it for the model) in the page's own
/// world.
fn install_reference(tab: &Page, source: &str) -> Result<()> {
    tab.eval(&format!("window.__bdt = {source}; 0"))?;
    tab.eval(
        r#"window.__bdtText = (r) => {
  const KEEP = ['title','type','checked','name','role','value','placeholder','data-date-format','alt','aria-label','aria-expanded','data-state','aria-checked'];
  const map = r.map, out = [], labels = [];
  let count = 0;
  const textOf = (id) => { const n = map[id]; if (!n) return '';
    if (n.type === 'TEXT_NODE') return n.text || '';
    if (n.highlightIndex !== undefined && n.highlightIndex !== null) return '';
    return (n.children || []).map(textOf).join(' '); };
  const walk = (id, inside, depth) => { const n = map[id]; if (!n) return;
    if (n.type === 'TEXT_NODE') { if (!inside && n.isVisible && n.text.trim()) out.push('\t'.repeat(depth) + n.text.trim()); return; }
    let here = inside;
    if (n.highlightIndex !== undefined && n.highlightIndex !== null) {
      count++; here = true;
      const a = n.attributes || {}; if (a['aria-label']) labels.push(a['aria-label']);
      const attrs = KEEP.filter(k => a[k]).map(k => `${k}=${String(a[k]).slice(0, 100)}`).join(' ');
      const text = (n.children || []).map(textOf).join(' ').replace(/\s+/g, ' ').trim();
      out.push(`${'\t'.repeat(depth)}[${n.highlightIndex}]<${n.tagName}${attrs ? ' ' + attrs : ''}>${text} />`);
    }
    (n.children || []).forEach(c => walk(c, here, depth + (here !== inside ? 1 : 0)));
  };
  walk(r.rootId, false, 0);
  return { text: out.join('\n'), count, labels };
}; 0"#,
    )?;
    Ok(())
}

/// One timed run of the reference; with `describe`, also its text.
fn run_reference(tab: &Page, expansion: i32, overlays: bool, describe: bool) -> Result<Value> {
    let js = format!(
        "(() => {{
           const t0 = performance.now();
           const r = window.__bdt({{doHighlightElements: {overlays}, focusHighlightIndex: -1, viewportExpansion: {expansion}, debugMode: false}});
           const ms = performance.now() - t0;
           document.getElementById('playwright-highlight-container')?.remove();
           const out = {{ms}};
           if ({describe}) Object.assign(out, window.__bdtText(r));
           return out;
         }})()"
    );
    let r = tab.cdp().call_timeout(
        "Runtime.evaluate",
        json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        Some(&tab.session_id),
        Duration::from_secs(600),
    )?;
    if let Some(ex) = r.get("exceptionDetails") {
        bail!("the reference threw: {ex}");
    }
    Ok(r["result"]["value"].clone())
}

fn f(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.1}"),
        None => "—".into(),
    }
}

fn ratio(a: &Value, b: &Value) -> String {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.3}", a / b),
        _ => "—".into(),
    }
}

/// The markdown table printed at the end (and pasted into BENCHMARKS.md).
fn table(rows: &[Value]) -> String {
    let mut t = String::from(
        "| page | elements | Errand wasm | wasm+marks | Errand js | js+marks | after 1 change (wasm) | ref viewport | ref vp+marks | ref page | ref page+marks | page+marks ratio | page ratio | viewport ratio | tokens Errand / ref page / ref vp | change / full (wasm) | re-read in place / equal to full |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|\n",
    );
    for r in rows {
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} | {}/{REPS} / {} |\n",
            r["page"].as_str().unwrap_or("?"),
            r["elements"],
            f(&r["errand_wasm_plain"]),
            f(&r["errand_wasm_marks"]),
            f(&r["errand_js_plain"]),
            f(&r["errand_js_marks"]),
            f(&r["errand_wasm_after_change"]),
            f(&r["ref_viewport_plain"]),
            f(&r["ref_viewport_marks"]),
            f(&r["ref_page_plain"]),
            f(&r["ref_page_marks"]),
            ratio(&r["errand_wasm_marks"], &r["ref_page_marks"]),
            ratio(&r["errand_wasm_plain"], &r["ref_page_plain"]),
            ratio(&r["errand_wasm_plain"], &r["ref_viewport_plain"]),
            r["errand_tokens"],
            r["ref_page_tokens"],
            r["ref_viewport_tokens"],
            ratio(&r["errand_wasm_after_change"], &r["errand_wasm_plain"]),
            r["errand_wasm_incremental_runs"],
            r["errand_wasm_incremental_equal"],
        ));
    }
    t.push_str(
        "\nRe-observation after one change, sent as a diff against the observation the host holds \
         (as the host asks) and whole (asked without `since`), WASM build; round trip from the \
         driver through the service worker, and the reply's size:\n\n\
         | page | in page (ms) | round trip diff / whole (ms) | reply diff / whole (bytes) |\n\
         |---|---:|---:|---:|\n",
    );
    for r in rows.iter().filter(|r| r.get("errand_wasm_change_trip_diff").is_some()) {
        let bytes = |v: &Value| v.as_f64().map_or("—".into(), |b| format!("{b:.0}"));
        t.push_str(&format!(
            "| {} | {} | {} / {} | {} / {} |\n",
            r["page"].as_str().unwrap_or("?"),
            f(&r["errand_wasm_after_change"]),
            f(&r["errand_wasm_change_trip_diff"]),
            f(&r["errand_wasm_change_trip_whole"]),
            bytes(&r["errand_wasm_change_bytes_diff"]),
            bytes(&r["errand_wasm_change_bytes_whole"]),
        ));
    }
    t.push_str("\nRecall / precision on the generated pages (Errand; reference whole page):\n\n");
    for r in rows.iter().filter(|r| r.get("errand_recall").is_some()) {
        t.push_str(&format!(
            "- {}: Errand {:.4} / {:.4}; reference {} / {}\n",
            r["page"].as_str().unwrap_or("?"),
            r["errand_recall"].as_f64().unwrap_or(0.0),
            r["errand_precision"].as_f64().unwrap_or(0.0),
            f(&r["ref_page_recall"]),
            f(&r["ref_page_precision"]),
        ));
    }
    t
}

/// The token figures alone: Errand against the reference's whole-page text
/// (the issue's target is a ratio of at most 0.6).
fn token_table(rows: &[Value]) -> String {
    let mut t = String::from(
        "| page | tokens Errand | ref page | ref viewport | Errand / ref page |\n|---|---:|---:|---:|---:|\n",
    );
    for r in rows {
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r["page"].as_str().unwrap_or("?"),
            r["errand_tokens"],
            r["ref_page_tokens"],
            r["ref_viewport_tokens"],
            ratio(&r["errand_tokens"], &r["ref_page_tokens"]),
        ));
    }
    t
}

/// Draws time against page size with matplotlib (installed from PyPI into
/// `.tools/py` when missing).
fn plot(root: &Path, json: &Path, png: &Path) -> Result<()> {
    let py: PathBuf = root.join(".tools/py");
    let has = Command::new("python3")
        .env("PYTHONPATH", &py)
        .args(["-c", "import matplotlib"])
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        eprintln!("installing matplotlib from PyPI into .tools/py");
        Command::new("pip")
            .args(["install", "--quiet", "--target"])
            .arg(&py)
            .arg("matplotlib")
            .status()?;
    }
    let script = r#"
import json, sys
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
rows = json.load(open(sys.argv[1]))['pages']
series = [('errand_wasm_plain', 'Errand (WASM)', 'o-'), ('errand_wasm_marks', 'Errand (WASM) + marks', 'o--'),
          ('errand_js_plain', 'Errand (JS)', 's-'), ('errand_js_marks', 'Errand (JS) + marks', 's--'),
          ('ref_viewport_plain', 'buildDomTree viewport', '^-'), ('ref_viewport_marks', 'buildDomTree viewport + overlays', '^--'),
          ('ref_page_plain', 'buildDomTree whole page', 'v-'), ('ref_page_marks', 'buildDomTree whole page + overlays', 'v--')]
fig, ax = plt.subplots(figsize=(10, 6.5))
for key, label, style in series:
    pts = sorted((r['elements'], r[key]) for r in rows if r.get(key) is not None and r.get('elements'))
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label, markersize=4, linewidth=1)
ax.set_xscale('log'); ax.set_yscale('log')
ax.set_xlabel('elements on the page'); ax.set_ylabel('observation time, ms (median)')
ax.set_title('Errand observation vs browser-use buildDomTree.js (0.5.11), same Chromium')
ax.grid(True, which='both', alpha=.3); ax.legend(fontsize=8)
fig.tight_layout(); fig.savefig(sys.argv[2], dpi=110)
"#;
    let ok = Command::new("python3")
        .env("PYTHONPATH", &py)
        .arg("-c")
        .arg(script)
        .arg(json)
        .arg(png)
        .status()?
        .success();
    if !ok {
        bail!("plotting failed");
    }
    Ok(())
}
