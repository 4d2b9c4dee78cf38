//! What the content script sees in a page.

use serde::{Deserialize, Serialize};

use crate::Build;

/// The page as the model is told about it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub url: String,
    pub title: String,
    /// Which build of the content script made this observation.
    pub build: Option<Build>,
    /// The interactive elements, numbered.
    pub elements: Vec<ElementInfo>,
    /// The compact, model-facing text: `[12]<button>Submit</button>` lines.
    pub text: String,
    pub viewport: Viewport,
    /// How long the observation took in the page, in milliseconds.
    pub elapsed_ms: f64,
    /// Set when the observation started from the previous one and re-read
    /// only what changed since: how many subtrees it re-read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reobserved: Option<u32>,
    /// Set when the observation could have started from the previous one
    /// but walked the whole page: why (for the benchmarks and debugging).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// This observation's number in its document, for the next one's
    /// `since` (see [`crate::ObservationDiff`]); 0 when not numbered.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seq: u64,
    /// Set when `elements` and `text` are left empty because only what
    /// changed since the observation the host holds is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<crate::ObservationDiff>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One interactive element.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElementInfo {
    /// The number the model uses; stable while the element lives.
    pub index: u32,
    /// Lower-case tag name.
    pub tag: String,
    /// Explicit or implicit ARIA role, when it says more than the tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The name a person would read: text, label, aria-label, placeholder…
    pub name: String,
    /// For inputs: the `type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_type: Option<String>,
    /// For form fields: the current value (never for passwords).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Where it is, in CSS pixels of the top document's viewport.
    pub rect: Rect,
    /// Whether any of it is inside the viewport.
    pub in_viewport: bool,
    #[serde(default)]
    pub disabled: bool,
    /// Where activating it navigates: a link's address, or the address a
    /// form is sent to by its submit button (or by Enter in its fields).
    /// The host checks it against the site lists before a click.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The origin of the document it is in, when that is a cross-origin
    /// frame's (`None`: the page's own). Read by the frame's own content
    /// script; the host fills a secret into it only when the secret is
    /// allowed on this origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// A rectangle in CSS pixels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// The window's size and scroll position.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Viewport {
    pub width: f64,
    pub height: f64,
    pub scroll_x: f64,
    pub scroll_y: f64,
    pub page_width: f64,
    pub page_height: f64,
}
