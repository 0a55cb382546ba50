//! `declare_params!`: an options or parameter object declared once, giving its Rust struct,
//! its reader and its TypeScript (see src/wasm/params.rs). Here, below the converters that
//! read declared objects (request options, `AdamParams`, `SamplingParams`), so that the
//! skin's modules form no cycle.
//!
//! (A macro of ours rather than serde + serde-wasm-bindgen: the lite build has no serde,
//! whose generated code cost it about 20 KB gzip (issue 8), and the readers below are the
//! ones every other object of the skin already uses, with the same error messages.)

use super::*;

/// A field type of a parameter object, read from an [`Opts`] (absent = `None`).
pub(crate) trait Field: Sized {
    fn read(o: &Opts, key: &str) -> Result<Option<Self>, JsValue>;
}

impl Field for String {
    fn read(o: &Opts, key: &str) -> Result<Option<Self>, JsValue> {
        o.string(key)
    }
}

impl Field for bool {
    fn read(o: &Opts, key: &str) -> Result<Option<Self>, JsValue> {
        o.bool(key)
    }
}

impl Field for f64 {
    fn read(o: &Opts, key: &str) -> Result<Option<Self>, JsValue> {
        o.number(key)
    }
}

impl Field for u32 {
    fn read(o: &Opts, key: &str) -> Result<Option<Self>, JsValue> {
        Ok(o.uint(key, u32::MAX as u64)?.map(|n| n as u32))
    }
}

impl Field for u64 {
    fn read(o: &Opts, key: &str) -> Result<Option<Self>, JsValue> {
        o.uint(key, u64::MAX)
    }
}

impl Field for StrMap<String> {
    fn read(o: &Opts, key: &str) -> Result<Option<Self>, JsValue> {
        o.string_map(key)
    }
}

/// A value the method converts itself (data, nested wire objects, `Date`s); null is absent.
impl Field for JsValue {
    fn read(o: &Opts, key: &str) -> Result<Option<Self>, JsValue> {
        let v = o.get(key);
        Ok((!v.is_undefined() && !v.is_null()).then_some(v))
    }
}

impl Field for Vec<String> {
    fn read(o: &Opts, key: &str) -> Result<Option<Self>, JsValue> {
        let v = o.get(key);
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        if !Array::is_array(&v) {
            return Err(type_error(
                key,
                format!("must be an array of strings, got {}", describe(&v)),
            ));
        }
        Array::from(&v)
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_string().ok_or_else(|| {
                    type_error(
                        &format!("{key}[{i}]"),
                        format!("must be a string, got {}", describe(&x)),
                    )
                })
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

/// Declares parameter objects: `Name("what") { /// doc\n field: RustType => "TS", }`,
/// where the TS text is the declaration after the name (`"?: number"`, `": string"`);
/// `ts = CONST;` names the TypeScript section's constant. Field names are the JS keys
/// (snake_case for parameters, camelCase for client options).
macro_rules! declare_params {
    (ts = $tsname:ident; $(
        $(#[doc = $doc:literal])+
        $name:ident($what:literal) {
            $(
                $(#[doc = $fdoc:literal])+
                $field:ident: $ty:ty => $ts:literal,
            )*
        }
    )*) => {
        $(
            $(#[doc = $doc])+
            #[derive(Default)]
            #[allow(non_snake_case, dead_code)]
            pub(crate) struct $name {
                $(
                    $(#[doc = $fdoc])+
                    pub $field: Option<$ty>,
                )*
            }

            impl $name {
                /// The parameter names, as the wire and the Python SDK name them.
                pub const KEYS: &'static [&'static str] = &[$(stringify!($field)),*];

                /// Reads `v` (undefined or null: every field absent).
                #[allow(dead_code)]
                pub fn read(v: &::wasm_bindgen::JsValue) -> Result<Self, ::wasm_bindgen::JsValue> {
                    Self::read_as(v, $what)
                }

                /// Reads `v`, naming it `what` in errors.
                pub fn read_as(v: &::wasm_bindgen::JsValue, what: &str) -> Result<Self, ::wasm_bindgen::JsValue> {
                    let _o = $crate::wasm::convert::Opts::new(v, what, Self::KEYS)?;
                    Ok($name {
                        $($field: <$ty as $crate::wasm::convert::Field>::read(&_o, stringify!($field))?,)*
                    })
                }
            }

            /// A nested parameter object (absent when undefined or null).
            impl $crate::wasm::convert::Field for $name {
                fn read(
                    o: &$crate::wasm::convert::Opts,
                    key: &str,
                ) -> Result<Option<Self>, ::wasm_bindgen::JsValue> {
                    let v = o.get(key);
                    if v.is_undefined() || v.is_null() {
                        return Ok(None);
                    }
                    $name::read_as(&v, key).map(Some)
                }
            }
        )*

        #[::wasm_bindgen::prelude::wasm_bindgen(typescript_custom_section)]
        const $tsname: &'static str = concat!($(
            "\n/**", $("\n *", $doc,)+ "\n */\nexport interface ", stringify!($name), " {\n",
            $(
                "  /**", $("\n   *", $fdoc,)+ "\n   */\n  ", stringify!($field), $ts, ";\n",
            )*
            "}\n",
        )*);
    };
}

pub(crate) use declare_params;

/// Whether two strings are equal (a `const fn`, for compile-time checks).
pub(crate) const fn same_str(x: &str, y: &str) -> bool {
    let (x, y) = (x.as_bytes(), y.as_bytes());
    if x.len() != y.len() {
        return false;
    }
    let mut j = 0;
    while j < x.len() {
        if x[j] != y[j] {
            return false;
        }
        j += 1;
    }
    true
}

/// Whether two key lists are the same, in the same order (for compile-time checks).
pub(crate) const fn same_strs(a: &[&str], b: &[&str]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if !same_str(a[i], b[i]) {
            return false;
        }
        i += 1;
    }
    true
}

/// Declares data shapes whose readers are the hot data path's own (src/wasm/convert/data.rs
/// and batch.rs, JS-assisted, for speed): `Name { /// doc\n "key" => "TS", }` gives the
/// TypeScript interface with its doc text and `Name::KEYS`, the keys those readers allow
/// (keys are string literals: `type` is one). `ts = CONST;` names the section's constant.
macro_rules! declare_shapes {
    (ts = $tsname:ident; $(
        $(#[doc = $doc:literal])+
        $name:ident {
            $(
                $(#[doc = $fdoc:literal])+
                $key:literal => $ts:literal,
            )*
        }
    )*) => {
        $(
            $(#[doc = $doc])+
            pub(crate) struct $name;

            impl $name {
                /// The keys of the shape, in its declaration's order.
                pub const KEYS: &'static [&'static str] = &[$($key),*];
            }
        )*

        #[::wasm_bindgen::prelude::wasm_bindgen(typescript_custom_section)]
        const $tsname: &'static str = concat!($(
            "\n/**", $("\n *", $doc,)+ "\n */\nexport interface ", stringify!($name), " {\n",
            $(
                "  /**", $("\n   *", $fdoc,)+ "\n   */\n  ", $key, $ts, ";\n",
            )*
            "}\n",
        )*);
    };
}

pub(crate) use declare_shapes;
