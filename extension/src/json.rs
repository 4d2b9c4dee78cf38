//! The reply's JSON text in the WebAssembly build, without serde_json.
//!
//! The content script hands the loader its reply as a JavaScript object
//! (`messages::encode_reply`). serde-wasm-bindgen builds that object one
//! call into JavaScript per field and per string: for a 1k-element
//! observation about 20,000 calls, 8–12 ms in the WebAssembly build against
//! 4–6 ms for main's JSON text (serde_json) and the loader's `JSON.parse`
//! (BENCHMARKS.md, "serde_json out of the content script"). So the
//! WebAssembly build writes the text with this serializer
//! and parses it with `js_sys::JSON::parse`; the JS build (wasm2js), where a
//! call into JavaScript is cheap and Rust's float printer slow, keeps
//! serde-wasm-bindgen.
//!
//! The text is what serde_json writes for the same value (compact; `"`,
//! `\` and control characters escaped, `\u001f` in lower case), except
//! floats: the shortest text that reads back as the same number (`12` where
//! serde_json writes `12.0`; whole numbers and multiples of 1/64 written by
//! hand, any other by the engine's `Number#toString`, [`float_text`]),
//! which `JSON.parse` reads as serde_json's; NaN and infinities are `null`,
//! as in serde_json. Only string map keys (every map the protocol has).
//! The frames' relay and the network question (`frames`, `net.rs`) are
//! written by it too.

use std::fmt;

use serde::ser::{self, Serialize};

/// Why a value could not be written (a map key that is not a string).
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        Error(msg.to_string())
    }
}

/// `value`'s JSON text.
/// `text` as a JSON string: quoted, `"`, `\\` and control characters
/// escaped, as serde_json writes it.
pub fn quote(text: &str) -> String {
    let mut w = Writer { out: String::with_capacity(text.len() + 2) };
    w.string(text);
    w.out
}

/// A finite float's shortest text that reads back as the same number. In
/// the browser the engine's (`Number#toString`: `1e+21` past 10^21, which
/// is also what the host gets of a reply's number whatever the crate
/// writes, the service worker handing it the reply's object for the
/// browser's `JSON.stringify`), with no float printer of core's in the
/// module; natively (the unit tests) `Display`'s.
pub fn float_text(v: f64) -> String {
    #[cfg(target_arch = "wasm32")]
    {
        js_sys::Number::from(v).to_string_with_radix(10).map(String::from).unwrap_or_default()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        v.to_string()
    }
}

pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, Error> {
    let mut w = Writer { out: String::with_capacity(4096) };
    value.serialize(&mut w)?;
    Ok(w.out)
}

struct Writer {
    out: String,
}

impl Writer {
    fn string(&mut self, s: &str) {
        self.out.push('"');
        let bytes = s.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let escape: &str = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                0..=0x1f => "",
                _ => continue,
            };
            self.out.push_str(&s[start..i]);
            if escape.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.out.push_str("\\u00");
                self.out.push(char::from(HEX[usize::from(b >> 4)]));
                self.out.push(char::from(HEX[usize::from(b & 0xf)]));
            } else {
                self.out.push_str(escape);
            }
            start = i + 1;
        }
        self.out.push_str(&s[start..]);
        self.out.push('"');
    }

    /// A float: a multiple of 1/64 under 2^31 (Chromium's layout unit: most
    /// of a page's lengths) or a whole one by [`Writer::digits`], the rest by
    /// [`float_text`] (a call into the engine; core's printer was slower at
    /// `opt-level = "z"`: a 1k-element observation has 4,000 numbers, and
    /// it is no longer in the module). A multiple of 1/64 has at
    /// most six decimals, and under 2^31 half a unit in the last place is
    /// under 1e-6, so its exact decimals are also its shortest text (what
    /// `Display` writes; `writes_lengths_as_display_does` checks).
    fn float(&mut self, v: f64) {
        if !v.is_finite() {
            self.out.push_str("null");
        } else if v.abs() < 2_147_483_648.0 && (v * 64.0).fract() == 0.0 {
            if v.is_sign_negative() {
                self.out.push('-');
            }
            let n = (v.abs() * 64.0) as u64;
            self.digits(n / 64);
            // The fraction in millionths: 1/64 = 0.015625.
            let mut frac = (n % 64) * 15_625;
            if frac != 0 {
                let mut buf = [b'0'; 6];
                for d in buf.iter_mut().rev() {
                    *d = b'0' + (frac % 10) as u8;
                    frac /= 10;
                }
                let len = buf.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1);
                self.out.push('.');
                for &d in &buf[..len] {
                    self.out.push(char::from(d));
                }
            }
        } else if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
            if v.is_sign_negative() {
                self.out.push('-');
            }
            self.digits(v.abs() as u64);
        } else {
            self.shortest(v);
        }
    }

    /// Any other finite float: [`float_text`].
    fn shortest(&mut self, v: f64) {
        self.out.push_str(&float_text(v));
    }

    fn signed(&mut self, v: i64) {
        if v < 0 {
            self.out.push('-');
        }
        self.digits(v.unsigned_abs());
    }

    /// `v` in decimal, without `core::fmt`'s machinery.
    fn digits(&mut self, mut v: u64) {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for &d in &buf[i..] {
            self.out.push(char::from(d));
        }
    }

    /// `{"variant":` before a variant's content.
    fn open_variant(&mut self, variant: &str) {
        self.out.push('{');
        self.string(variant);
        self.out.push(':');
    }

    /// A sequence (`[`) or map (`{`) opened, and what will close it.
    fn compound(&mut self, open: char, close: &'static str) -> Compound<'_> {
        self.out.push(open);
        Compound { w: self, first: true, close }
    }
}

/// A sequence, map or struct being written: whether an item was, and what
/// closes it.
pub struct Compound<'a> {
    w: &'a mut Writer,
    first: bool,
    close: &'static str,
}

impl Compound<'_> {
    fn comma(&mut self) {
        if self.first {
            self.first = false;
        } else {
            self.w.out.push(',');
        }
    }
}

/// Scalar `Serializer` methods that each widen their value and write it
/// with one of [`Writer`]'s writers.
macro_rules! scalars {
    ($($method:ident($ty:ty) => $write:ident),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<(), Error> {
            self.$write(v.into());
            Ok(())
        }
    )*};
}

/// `Serializer` methods of a value a map key cannot be.
macro_rules! refused {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, _: $ty) -> Result<(), Error> {
            Err(not_a_string())
        }
    )*};
}

impl<'a> ser::Serializer for &'a mut Writer {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    scalars! {
        serialize_i8(i8) => signed,
        serialize_i16(i16) => signed,
        serialize_i32(i32) => signed,
        serialize_i64(i64) => signed,
        serialize_u8(u8) => digits,
        serialize_u16(u16) => digits,
        serialize_u32(u32) => digits,
        serialize_u64(u64) => digits,
        serialize_f32(f32) => float,
        serialize_f64(f64) => float,
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.string(v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.out.push_str("null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.push_str("null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.string(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.open_variant(variant);
        value.serialize(&mut *self)?;
        self.out.push('}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.compound('[', "]"))
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Error> {
        self.open_variant(variant);
        Ok(self.compound('[', "]}"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.compound('{', "}"))
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Error> {
        self.open_variant(variant);
        Ok(self.compound('{', "}}"))
    }
}

macro_rules! elements {
    ($($trait:ident::$method:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.comma();
                value.serialize(&mut *self.w)
            }
            fn end(self) -> Result<(), Error> {
                self.w.out.push_str(self.close);
                Ok(())
            }
        }
    )*};
}
elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Error> {
                self.comma();
                self.w.string(key);
                self.w.out.push(':');
                value.serialize(&mut *self.w)
            }
            fn end(self) -> Result<(), Error> {
                self.w.out.push_str(self.close);
                Ok(())
            }
        }
    )*};
}
fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.comma();
        key.serialize(KeyWriter(self.w))?;
        self.w.out.push(':');
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(&mut *self.w)
    }
    fn end(self) -> Result<(), Error> {
        self.w.out.push_str(self.close);
        Ok(())
    }
}

/// A map key: a string only.
struct KeyWriter<'a>(&'a mut Writer);

impl ser::Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.0.string(v);
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.0.string(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    refused! {
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.0.string(v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Error> {
        Err(not_a_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Error> {
        Err(not_a_string())
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Err(not_a_string())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(not_a_string())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(not_a_string())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_a_string())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_a_string())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_a_string())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(not_a_string())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(not_a_string())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_a_string())
    }
}

fn not_a_string() -> Error {
    Error("a map key must be a string".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use errand_protocol::{Body, Effect, ElementInfo, Envelope, Observation, Rect, Viewport};

    /// A string quoted as serde_json quotes it (the field values' text and
    /// a dialog's answer are read by the model and the main world as JSON).
    #[test]
    fn quotes_as_serde_json_does() {
        for text in
            ["", "plain", "a \"b\" \\ c", "tab\tnew\nline\u{1f}\u{0}", "é ✓ 😀", "</script>"]
        {
            assert_eq!(quote(text), serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }

    /// The same text as serde_json's for values whose floats are not whole
    /// (serde_json writes `2.0` where this writes `2`, which reads back the
    /// same).
    /// Multiples of 1/64 (and others) as `Display` writes them, which is
    /// the shortest text that reads back as the same number.
    #[test]
    fn writes_lengths_as_display_does() {
        let mut values: Vec<f64> = (-70_000i64..70_000).map(|n| n as f64 / 64.0).collect();
        for big in [2_147_483_647.984375, 2_147_483_648.0, 1e15 + 0.5, 123_456_789.015625] {
            values.push(big);
            values.push(-big);
        }
        values.extend([0.1, 1.0 / 3.0, 1e-7, 5e-324, 69.5, 1280.0, 0.015625, 39.100000001490116]);
        for v in values {
            let mut w = Writer { out: String::new() };
            w.float(v);
            assert_eq!(w.out, format!("{v}"), "{v:?}");
        }
    }

    #[test]
    fn writes_what_serde_json_writes() {
        let observation = Observation {
            url: "https://example.com/a?b=\"c\"".into(),
            title: "t\u{1f}\u{7f}\n\r\t\u{8}\u{c}\\/ é ✓ 😀".into(),
            elements: vec![ElementInfo {
                index: 3,
                tag: "button".into(),
                role: Some("button".into()),
                name: "Go \"now\"".into(),
                rect: Rect { x: 0.5, y: -1.25, width: 0.001, height: 123456.789 },
                in_viewport: true,
                ..Default::default()
            }],
            text: "[3]<button>Go</button>\n".into(),
            viewport: Viewport {
                width: 1280.5,
                height: 800.5,
                scroll_x: 0.25,
                scroll_y: 10.5,
                page_width: 1280.5,
                page_height: 3000.75,
            },
            elapsed_ms: 2.5,
            seq: 4,
            reobserved: Some(7),
            ..Default::default()
        };
        let effect = Effect {
            summary: "clicked".into(),
            value: Some("x".into()),
            appeared: vec!["a menu".into()],
            new_tab: Some(-3),
            ..Default::default()
        };
        for body in [
            Body::Observation(observation),
            Body::ActionDone { effect },
            Body::Ack {},
            Body::Error { code: errand_protocol::ErrorCode::NoSuchElement, message: "no".into() },
        ] {
            let env = Envelope { v: 1, id: 8, re: Some(2), body };
            assert_eq!(to_string(&env).unwrap(), serde_json::to_string(&env).unwrap());
        }
        let mut map = std::collections::BTreeMap::new();
        map.insert("k\"ey", vec![(1u32, 'x'), (2, '"')]);
        assert_eq!(to_string(&map).unwrap(), serde_json::to_string(&map).unwrap());
        assert_eq!(to_string(&[f64::NAN, f64::INFINITY]).unwrap(), "[null,null]");
        assert_eq!(
            to_string(&[1.0, -0.0, 1e21, 0.1]).unwrap(),
            "[1,-0,1000000000000000000000,0.1]"
        );
        let mut bad = std::collections::BTreeMap::new();
        bad.insert(1u8, 2u8);
        assert!(to_string(&bad).is_err());
    }
}
