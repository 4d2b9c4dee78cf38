//! Small text utilities every layer may use, and the one rule for text
//! shown on a terminal ([`printable`]): what the terminal commands print
//! (`cli/term.rs`) and the log lines (`setup/logging.rs`) quote pages.

use std::borrow::Cow;

/// At most `max` characters, with an ellipsis when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

/// A character a terminal may obey rather than show: C0 (tab and newline
/// included: callers keep those where they mean something), DEL, C1, and
/// the bidi embeddings, overrides and isolates.
pub fn is_terminal_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A formatted log line without the controls the log formatter leaves as
/// they are (`tracing-subscriber` writes ESC, BEL, BS and C1 in values as
/// `\x1b`…, and its own colours as real escapes, which are kept): a
/// carriage return (or another C0 control) and the bidi controls.
pub fn for_log(line: &str) -> Cow<'_, str> {
    let drop = |c: char| is_terminal_control(c) && !matches!(c, '\n' | '\t' | '\u{1b}');
    if !line.chars().any(drop) {
        return Cow::Borrowed(line);
    }
    Cow::Owned(line.chars().filter(|&c| !drop(c)).collect())
}

/// `text` with every terminal control removed (escape sequences whole);
/// newlines and tabs kept.
pub fn printable(text: &str) -> Cow<'_, str> {
    clean(text, false)
}

/// [`printable`], and a newline or a tab becomes a space: for a line that
/// must stay one line (an approval, a step), whatever a page named things.
pub fn one_line(text: &str) -> Cow<'_, str> {
    clean(text, true)
}

fn clean(text: &str, one_line: bool) -> Cow<'_, str> {
    if !text.chars().any(is_terminal_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' if one_line => out.push(' '),
            '\n' | '\t' => out.push(c),
            // ESC: the sequence it begins goes with it.
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // ESC, intermediates, one final character.
                Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
                    while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
                    chars.next();
                }
                _ => {}
            },
            // The C1 forms of CSI, and of OSC, DCS, SOS, PM, APC.
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if is_terminal_control(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Past a CSI's parameters and intermediates, and its final character.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.next_if(|c| ('\u{20}'..='\u{3f}').contains(c)).is_some() {}
    if chars.peek().is_some_and(|c| ('\u{40}'..='\u{7e}').contains(c)) {
        chars.next();
    }
}

/// Past a control string (OSC, DCS, …) and what ends it: BEL, ESC `\\` or
/// ST; an unended one runs to the end of the text.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_between_characters() {
        assert_eq!(super::cut("héllo", 10), "héllo");
        assert_eq!(super::cut("héllo", 2), "hé…");
    }

    #[test]
    fn terminal_controls_from_pages_are_removed() {
        // Erase the line and return: the "approval needed" line rewritten.
        assert_eq!(
            printable("Pay\u{1b}[2K\rapproval needed: scroll"),
            "Payapproval needed: scroll"
        );
        // OSC (a window title, a hyperlink), ended by BEL or by ST.
        assert_eq!(printable("a\u{1b}]0;owned\u{7}b\u{1b}]8;;https://x.example\u{1b}\\c"), "abc");
        // Colours, cursor moves, a DCS, charset switches, the C1 forms.
        assert_eq!(printable("\u{1b}[31;1mred\u{1b}[0m\u{1b}[10A"), "red");
        assert_eq!(printable("x\u{1b}Pq#0;2;0;0;0\u{1b}\\y\u{1b}(0z"), "xyz");
        assert_eq!(printable("a\u{9b}2Kb\u{9d}0;t\u{9c}c\u{85}d"), "abcd");
        // C0, DEL, backspaces; newline and tab kept.
        assert_eq!(printable("a\u{8}\u{8}b\u{7f}c\u{0}\u{7}\nd\te"), "abc\nd\te");
        // Bidi overrides and isolates: "exe.txt" cannot pass for "txt.exe".
        assert_eq!(printable("invoice\u{202e}txt.exe"), "invoicetxt.exe");
        assert_eq!(
            printable("\u{2066}a\u{2067}b\u{2068}c\u{2069}\u{202a}\u{202b}\u{202c}\u{202d}"),
            "abc"
        );
        // An unended sequence takes nothing after it with it but itself.
        assert_eq!(printable("ok\u{1b}"), "ok");
        assert_eq!(printable("ok\u{1b}]0;never ended"), "ok");
        // Ordinary text, other scripts and emoji untouched (and not copied).
        assert!(matches!(printable("Grüße, 東京 👋 — ok"), Cow::Borrowed(_)));
        assert_eq!(one_line("two\nlines\tand a tab"), "two lines and a tab");
        // A log line keeps its formatter's colours, loses a return and bidi.
        assert_eq!(
            for_log("\u{1b}[2mWARN\u{1b}[0m on x\r\u{202e}page: \\x1b[2K\n"),
            "\u{1b}[2mWARN\u{1b}[0m on xpage: \\x1b[2K\n"
        );
    }
}
