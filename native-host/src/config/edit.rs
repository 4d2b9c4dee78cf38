//! Changing the file (the side panel's settings): edits that keep the
//! user's comments, key order and other keys, written owner-only and
//! atomically.

use super::*;

/// The first lines of a `config.toml` the side panel creates.
pub(super) const NEW_FILE_HEADER: &str = "# Errand's settings (`errand doctor` shows what is in effect).\n\
# The side panel changes the values it sets and keeps everything else as written.\n";

/// One change to `config.toml`: `[section] key = value`, or the key removed.
#[derive(Debug, Clone)]
pub struct Edit {
    pub section: &'static str,
    pub key: &'static str,
    /// `None` removes the key.
    pub value: Option<toml_edit::Value>,
}

impl Edit {
    /// Sets `[section] key = value`.
    pub fn set(
        section: &'static str,
        key: &'static str,
        value: impl Into<toml_edit::Value>,
    ) -> Edit {
        Edit { section, key, value: Some(value.into()) }
    }

    /// Removes `key` from `[section]` (back to the default).
    pub fn remove(section: &'static str, key: &'static str) -> Edit {
        Edit { section, key, value: None }
    }

    /// Sets `[section] key = [items…]`. An empty list is written only over
    /// a list the file already has (keeping its comments); otherwise the
    /// key stays absent, which means the same.
    pub fn list(section: &'static str, key: &'static str, items: &[String]) -> Edit {
        Edit::set(section, key, toml_edit::Array::from_iter(items.iter().map(String::as_str)))
    }
}

impl Settings {
    /// Applies `edits` to `config.toml` and returns the settings that
    /// follow from it (file < `env` < the flags these settings were loaded
    /// with). The file is written only when those settings load: owner-only
    /// (0600 on Unix, it holds the API key) and atomically (a temporary
    /// file beside it, then a rename). Comments, key order, formatting and
    /// keys not edited are kept; a replaced value keeps its end-of-line
    /// comment.
    pub fn save_edits(
        &self,
        edits: &[Edit],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        if edits.is_empty() {
            return self.reload_with(env);
        }
        let path = self.config_file();
        let old = read_text(&path)?;
        let text = match old {
            Some(old) => apply_edits(&old, edits, &path)?,
            None => format!("{NEW_FILE_HEADER}\n{}", apply_edits("", edits, &path)?),
        };
        let file: FileConfig = toml::from_str(&text)
            .map_err(|e| ConfigError::Parse { path: path.clone(), message: e.to_string() })?;
        let mut next = Settings::resolve(
            file,
            env,
            &self.flags,
            self.config_dir.clone(),
            self.data_dir.clone(),
        )?;
        write_private(&path, &text)?;
        next.config_file_found = true;
        Ok(next)
    }
}

/// `text` (a TOML document) with `edits` applied, everything else kept.
pub fn apply_edits(text: &str, edits: &[Edit], path: &Path) -> Result<String, ConfigError> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        ConfigError::Parse { path: path.to_owned(), message: e.to_string() }
    })?;
    for edit in edits {
        apply_edit(&mut doc, edit, path)?;
    }
    Ok(doc.to_string())
}

pub(super) fn apply_edit(
    doc: &mut toml_edit::DocumentMut,
    edit: &Edit,
    path: &Path,
) -> Result<(), ConfigError> {
    use toml_edit::Item;
    let not_a_table = || ConfigError::NotATable { path: path.to_owned(), key: edit.section.into() };
    let Some(value) = &edit.value else {
        return match doc.get_mut(edit.section) {
            None => Ok(()),
            Some(Item::Table(_)) => {
                remove_keeping_comments(doc, edit.section, edit.key);
                Ok(())
            }
            Some(item) => {
                item.as_table_like_mut().ok_or_else(not_a_table)?.remove(edit.key);
                Ok(())
            }
        };
    };
    let empty_list = value.as_array().is_some_and(toml_edit::Array::is_empty);
    let present = doc
        .get(edit.section)
        .and_then(Item::as_table_like)
        .is_some_and(|t| t.contains_key(edit.key));
    if empty_list && !present {
        return Ok(());
    }
    let table = doc
        .entry(edit.section)
        .or_insert_with(toml_edit::table)
        .as_table_like_mut()
        .ok_or_else(not_a_table)?;
    let mut value = value.clone();
    match table.get_mut(edit.key) {
        Some(Item::Value(old)) => {
            // Keep the spacing and the end-of-line comment.
            *value.decor_mut() = old.decor().clone();
            *old = value;
        }
        Some(other) => *other = Item::Value(value),
        None => {
            table.insert(edit.key, Item::Value(value));
        }
    }
    Ok(())
}

/// Removes `[section] key`; the comment lines above it stay, above the
/// next key, else above the next table, else at the end of the file.
pub(super) fn remove_keeping_comments(doc: &mut toml_edit::DocumentMut, section: &str, key: &str) {
    let prefix =
        |d: &toml_edit::Decor| d.prefix().and_then(|p| p.as_str()).unwrap_or_default().to_owned();
    let Some(table) = doc.get_mut(section).and_then(toml_edit::Item::as_table_mut) else {
        return;
    };
    let comments =
        table.get_key_value(key).map(|(k, _)| prefix(k.leaf_decor())).filter(|p| p.contains('#'));
    let keys: Vec<String> = table.iter().map(|(k, _)| k.to_owned()).collect();
    let next_key = keys.iter().position(|k| k == key).and_then(|i| keys.get(i + 1)).cloned();
    let position = table.position();
    table.remove(key);
    let Some(comments) = comments else { return };
    if let Some(mut next) = next_key.and_then(|k| table.key_mut(&k)) {
        let old = prefix(next.leaf_decor());
        next.leaf_decor_mut().set_prefix(format!("{comments}{old}"));
        return;
    }
    let next_table = doc
        .iter()
        .filter_map(|(name, item)| Some((item.as_table()?.position()?, name.to_owned())))
        .filter(|(p, _)| position.is_some_and(|me| *p > me))
        .min()
        .map(|(_, name)| name);
    match next_table.and_then(|name| doc.get_mut(&name)?.as_table_mut()) {
        Some(t) => {
            let old = prefix(t.decor());
            t.decor_mut().set_prefix(format!("{comments}{old}"));
        }
        None => {
            let old = doc.trailing().as_str().unwrap_or_default().to_owned();
            doc.set_trailing(format!("{old}{comments}"));
        }
    }
}

/// Writes `text` to `path` owner-only and atomically: a temporary file in
/// the same folder, flushed, then renamed over it. A symlinked file is
/// written where the link points.
pub fn write_private(path: &Path, text: &str) -> Result<(), ConfigError> {
    use std::io::Write;
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = match is_link {
        true => std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()),
        false => path.to_owned(),
    };
    let err = |source| ConfigError::Write { path: target.clone(), source };
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".config.toml.")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    }
    tmp.write_all(text.as_bytes()).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(&target).map_err(|e| err(e.error))?;
    // The rename itself survives a crash once the folder is flushed.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
