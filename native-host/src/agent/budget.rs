//! Prices and the per-task budget: tokens and money. Each model call is
//! charged; when a limit is passed the task ends with a clear reason.
//!
//! Prices come from `native-host/data/prices.toml` (built in), overridden
//! by `<config dir>/prices.toml`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::llm::Usage;

/// The built-in price table.
pub const BUILT_IN: &str = include_str!("../../data/prices.toml");
/// The user's table's name inside the config dir.
pub const PRICES_FILE: &str = "prices.toml";

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

impl Price {
    /// What a call cost.
    pub fn cost(&self, usage: Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.input + usage.completion_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFile {
    #[serde(default)]
    models: BTreeMap<String, Price>,
}

/// A price table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    models: BTreeMap<String, Price>,
}

/// A price table that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{path} is not a valid price table: {message}")]
pub struct PricesError {
    pub path: String,
    pub message: String,
}

impl Prices {
    /// Reads a table in `prices.toml`'s format.
    pub fn parse(text: &str, path: &str) -> Result<Prices, PricesError> {
        let file: PriceFile = toml::from_str(text)
            .map_err(|e| PricesError { path: path.to_owned(), message: e.to_string() })?;
        Ok(Prices {
            models: file.models.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect(),
        })
    }

    /// The built-in table with `<config_dir>/prices.toml` over it. A broken
    /// user file is an error (a silently wrong price would break the limit).
    pub fn load(config_dir: &Path) -> Result<Prices, PricesError> {
        let mut prices = Prices::parse(BUILT_IN, "built-in prices.toml")?;
        let path = config_dir.join(PRICES_FILE);
        if let Ok(text) = std::fs::read_to_string(&path) {
            let user = Prices::parse(&text, &path.display().to_string())?;
            prices.models.extend(user.models);
        }
        Ok(prices)
    }

    /// The price of a model: its exact name, else the longest listed name
    /// it starts with; a `vendor/` prefix is ignored.
    pub fn price(&self, model: &str) -> Option<Price> {
        let full = model.trim().to_ascii_lowercase();
        let base = full.rsplit('/').next().unwrap_or(&full).to_owned();
        for name in [&full, &base] {
            if let Some(p) = self.models.get(name.as_str()) {
                return Some(*p);
            }
        }
        self.models
            .iter()
            .filter(|(k, _)| base.starts_with(k.as_str()))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| *p)
    }
}

/// A task's spending so far, against its limits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budget {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub price: Option<Price>,
    pub tokens: u64,
    pub cost_usd: f64,
}

impl Budget {
    pub fn new(max_tokens: Option<u64>, max_cost_usd: Option<f64>, price: Option<Price>) -> Budget {
        Budget { max_tokens, max_cost_usd, price, ..Default::default() }
    }

    /// Adds one call; returns its cost when the model has a price.
    pub fn charge(&mut self, usage: Usage) -> Option<f64> {
        self.tokens += usage.prompt_tokens + usage.completion_tokens;
        let cost = self.price.map(|p| p.cost(usage));
        self.cost_usd += cost.unwrap_or(0.0);
        cost
    }

    /// Why the task must end, when a limit is passed.
    pub fn exceeded(&self) -> Option<String> {
        if let Some(max) = self.max_tokens {
            if self.tokens > max {
                return Some(format!(
                    "the token budget is used up: the model calls used {} tokens, the limit is {max} \
                     (max_tokens under [agent] or ERRAND_MAX_TOKENS)",
                    self.tokens
                ));
            }
        }
        if let Some(max) = self.max_cost_usd {
            if self.price.is_some() && self.cost_usd > max {
                return Some(format!(
                    "the money budget is used up: the model calls cost ${:.4}, the limit is ${max:.4} \
                     (max_cost_usd under [agent] or ERRAND_MAX_COST_USD)",
                    self.cost_usd
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_table_reads_and_matches_by_prefix() {
        let p = Prices::parse(BUILT_IN, "x").unwrap();
        assert_eq!(p.price("gpt-4o").unwrap().input, 2.5);
        assert_eq!(p.price("gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
        assert_eq!(p.price("openai/gpt-4o-2024-08-06").unwrap().input, 2.5);
        assert_eq!(p.price("claude-sonnet-4-5-20250929").unwrap().output, 15.0);
        assert_eq!(p.price("llama3.1"), None);
    }

    #[test]
    fn the_user_file_wins() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(PRICES_FILE),
            "[models.\"gpt-4o\"]\ninput = 1.0\noutput = 2.0\n[models.scripted]\ninput = 1000\noutput = 1000\n",
        )
        .unwrap();
        let p = Prices::load(dir.path()).unwrap();
        assert_eq!(p.price("gpt-4o"), Some(Price { input: 1.0, output: 2.0 }));
        assert_eq!(p.price("scripted").unwrap().input, 1000.0);
        assert_eq!(p.price("gemini-2.5-flash").unwrap().input, 0.3);
        std::fs::write(dir.path().join(PRICES_FILE), "[models.x]\ninput = \"cheap\"\n").unwrap();
        let e = Prices::load(dir.path()).unwrap_err();
        assert!(e.to_string().contains("prices.toml"), "{e}");
    }

    #[test]
    fn charges_and_stops_at_the_limits() {
        let usage = Usage { prompt_tokens: 1000, completion_tokens: 100 };
        let mut b = Budget::new(Some(2000), None, None);
        assert_eq!(b.charge(usage), None);
        assert_eq!(b.exceeded(), None);
        b.charge(usage);
        let why = b.exceeded().unwrap();
        assert!(why.contains("2200 tokens") && why.contains("2000"), "{why}");

        let price = Price { input: 3.0, output: 15.0 };
        let mut b = Budget::new(None, Some(0.005), Some(price));
        let cost = b.charge(usage).unwrap();
        assert!((cost - 0.0045).abs() < 1e-12, "{cost}");
        assert_eq!(b.exceeded(), None);
        b.charge(usage);
        assert!(b.exceeded().unwrap().contains("$0.0090"));
    }
}
