//! `Map`s from page objects to numbers (the registry's element numbers,
//! the style cache's packed verdicts), read and written as numbers: one
//! call to the page each, where `Map.get` then `as_f64` was two, and
//! `Map.set` of a number boxed first (`Number(n)`) two.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(method, js_class = "Map", js_name = get)]
    fn get_number(this: &NumberMap, key: &JsValue) -> Option<f64>;
    #[wasm_bindgen(method, js_class = "Map", js_name = set)]
    fn set_number(this: &NumberMap, key: &JsValue, value: f64);
    #[wasm_bindgen(js_name = Map)]
    type NumberMap;
}

/// The number `map` holds for `key`, if any.
pub fn get(map: &js_sys::Map, key: &JsValue) -> Option<f64> {
    map.unchecked_ref::<NumberMap>().get_number(key)
}

/// Sets `key` to `value` in `map`.
pub fn set(map: &js_sys::Map, key: &JsValue, value: f64) {
    map.unchecked_ref::<NumberMap>().set_number(key, value)
}
