//! Small text utilities every layer may use.

/// At most `max` characters, with an ellipsis when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn cuts_between_characters() {
        assert_eq!(super::cut("héllo", 10), "héllo");
        assert_eq!(super::cut("héllo", 2), "hé…");
    }
}
