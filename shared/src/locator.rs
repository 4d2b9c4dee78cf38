//! How to find an element again on a later visit (recipes, issue 23): what
//! the content script read of the element it acted on, taken at the time
//! of acting, and the answer of [`crate::PageCommand::Locate`].
//!
//! The page tries the rungs of the ladder in [`RUNGS`] order; the first
//! that matches exactly one visible, usable element of the last
//! observation wins.

use serde::{Deserialize, Serialize};

/// The rungs of the ladder, in the order the page tries them.
pub const RUNGS: &[&str] =
    &["test_id", "role_name", "label", "field_name", "id", "text", "css", "position"];

/// What identifies an element, each part optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Locator {
    /// The element's tag (`input`, `button`).
    #[serde(default)]
    pub tag: String,
    /// Its ARIA role (explicit, else the tag's implicit one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Its accessible name, collapsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The text of its `<label>` (fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its visible text, collapsed and cut (not fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its `name` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_name: Option<String>,
    /// `data-testid`, `data-test` or `data-qa`, as `attribute=value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_id: Option<String>,
    /// `tag:nth-of-type(n)` steps from its document or shadow root; a
    /// shadow root's steps follow its host's after ` >> `.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub css: Option<String>,
    /// The CSS paths of the same-origin `<iframe>`s it is in, outermost
    /// first (empty in the top document).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame: Vec<String>,
    /// Where it was: x, y, width, height in its frame's viewport pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rect: Option<[f64; 4]>,
}

/// The element a [`Locator`] found now, and by which rung.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Located {
    /// Its element number in the current observation.
    pub index: u32,
    /// The rung that found it (one of [`RUNGS`]).
    pub rung: String,
}
