//! Writes `extension/generated/rules.js` from Rust (see `errand_protocol::rules_js`).

fn main() -> std::io::Result<()> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join(errand_protocol::rules_js::RULES_JS_PATH);
    std::fs::create_dir_all(path.parent().expect("the file is in a folder"))?;
    std::fs::write(&path, errand_protocol::rules_js::rules_js())?;
    eprintln!("wrote {}", errand_protocol::rules_js::RULES_JS_PATH);
    Ok(())
}
