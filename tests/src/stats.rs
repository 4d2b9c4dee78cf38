//! Summaries of repeated measurements for the benchmarks: the median and the
//! spread (10th and 90th percentile, min, max) of a sample.

use serde_json::{Value, json};

/// A sample of times (ms), summarised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// Summarises `sample` (NaN figures for an empty one).
    pub fn of(sample: &[f64]) -> Summary {
        let mut v = sample.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        Summary {
            n: v.len(),
            median: quantile(&v, 0.5),
            p10: quantile(&v, 0.1),
            p90: quantile(&v, 0.9),
            min: v.first().copied().unwrap_or(f64::NAN),
            max: v.last().copied().unwrap_or(f64::NAN),
        }
    }

    /// As JSON: `{n, median, p10, p90, min, max}`.
    pub fn to_json(&self) -> Value {
        let f = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
        json!({"n": self.n, "median": f(self.median), "p10": f(self.p10), "p90": f(self.p90),
               "min": f(self.min), "max": f(self.max)})
    }

    /// `median (p10–p90)`, to a sensible precision.
    pub fn show(&self) -> String {
        format!("{} ({}–{})", short(self.median), short(self.p10), short(self.p90))
    }
}

/// `median (p10–p90)` of a summary written by [`Summary::to_json`].
pub fn show_json(v: &Value) -> String {
    let f = |k: &str| short(v[k].as_f64().unwrap_or(f64::NAN));
    format!("{} ({}–{})", f("median"), f("p10"), f("p90"))
}

/// The `q` quantile of a sorted sample, interpolated between neighbours
/// (the median of an even sample is the mean of the middle two).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let at = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo as f64)
        }
    }
}

/// A time in ms with three significant digits (`0.412`, `12.3`, `1543`).
pub fn short(ms: f64) -> String {
    if !ms.is_finite() {
        "—".into()
    } else if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else if ms >= 1.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let s = Summary::of(&[5.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!((s.n, s.median, s.min, s.max), (5, 3.0, 1.0, 5.0));
        assert!((s.p10 - 1.4).abs() < 1e-9 && (s.p90 - 4.6).abs() < 1e-9, "{s:?}");
        assert_eq!(Summary::of(&[1.0, 2.0, 3.0, 10.0]).median, 2.5);
        assert!(Summary::of(&[]).median.is_nan());
        assert_eq!(Summary::of(&[0.5, 20.0, 150.0]).show(), "20.0 (4.40–124)");
    }
}
