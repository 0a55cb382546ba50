//! `Tokenizer.fromURL`'s fetching and caching: the file fetched or read from a Cache-like
//! store, and the prepared form kept beside it (issue 21).

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::tokenization as core;

use super::tokenizer_support::{await_promise, set, show, type_err};

/// The header of a cached `tokenizer.json` that names its prepared form (the key
/// [`prepared_url`] is made of), so a cached load needs neither the file's bytes nor its hash.
pub(super) const PREPARED_HEADER: &str = "x-tinker-wasm-prepared";

/// Fetches `url`, or reads it from `cache`; a fetched file is put in the cache, with
/// `tag(bytes)` in its [`PREPARED_HEADER`] when `tag` is given. Returns the bytes, and the
/// tag when it was computed (so the caller need not hash the file again).
pub(super) async fn fetch_bytes(
    url: &str,
    fetch: &Function,
    signal: &JsValue,
    cache: &Option<JsValue>,
    tag: Option<fn(&[u8]) -> String>,
) -> Result<(Vec<u8>, Option<String>), JsValue> {
    if let Some(c) = cache {
        if let Some(hit) = cache_match(c, url).await? {
            return Ok((hit, None));
        }
    }
    let init = Object::new();
    if !signal.is_undefined() {
        set(&init, "signal", signal);
    }
    let resp = await_promise(fetch.call2(&JsValue::UNDEFINED, &url.into(), &init)?).await?;
    let ok = Reflect::get(&resp, &"ok".into())?
        .as_bool()
        .unwrap_or(false);
    if !ok {
        let status = Reflect::get(&resp, &"status".into())?;
        return Err(js_sys::Error::new(&format!("fetching {url}: HTTP {}", show(&status))).into());
    }
    let ab: Function = Reflect::get(&resp, &"arrayBuffer".into())?.dyn_into()?;
    let buf = Uint8Array::new(&await_promise(ab.call0(&resp)?).await?);
    let bytes = buf.to_vec();
    if let Some(c) = cache {
        let src: Object = Reflect::get(&resp, &"headers".into())?.dyn_into()?;
        let get: Function = Reflect::get(&src, &"get".into())?.dyn_into()?;
        let header = |name: &str| {
            get.call1(&src, &name.into())
                .ok()
                .and_then(|v| v.as_string())
        };
        let content_type = header("content-type").unwrap_or_else(|| "application/json".into());
        let tag = tag.map(|f| f(&bytes));
        let cache_control = header("cache-control");
        cache_put(c, url, &buf, &content_type, cache_control, tag.as_deref()).await?;
        return Ok((bytes, tag));
    }
    Ok((bytes, None))
}

/// A header of the cache's entry for `url`, without reading its body.
pub(super) async fn cache_header(
    cache: &JsValue,
    url: &str,
    name: &str,
) -> Result<Option<String>, JsValue> {
    let match_fn: Function = Reflect::get(cache, &"match".into())?.dyn_into()?;
    let hit = await_promise(match_fn.call1(cache, &url.into())?).await?;
    if hit.is_undefined() || hit.is_null() {
        return Ok(None);
    }
    let headers = Reflect::get(&hit, &"headers".into())?;
    let get: Function = Reflect::get(&headers, &"get".into())?.dyn_into()?;
    Ok(get.call1(&headers, &name.into())?.as_string())
}

/// Where a cache keeps the prepared form of the tokenizer file fetched from `url` whose
/// [`core::Tokenizer::prepared_key`] is `key` (format version and hash of the file): the
/// URL with the SDK's version and that key as a query parameter, so a changed file or
/// another SDK version never reads a form made from something else.
pub(super) fn prepared_url(url: &str, key: &str) -> String {
    let sep = if url.as_bytes().contains(&b'?') {
        '&'
    } else {
        '?'
    };
    format!("{url}{sep}tinker-wasm-prepared={}-{key}", crate::VERSION)
}

/// The tokenizer of a cached prepared form, if there is one this version reads (a form it
/// cannot read is loaded from the file instead, and replaced).
pub(super) fn from_form(
    form: Option<Vec<u8>>,
    config: Option<&[u8]>,
    chat_template: Option<&str>,
) -> Option<core::Tokenizer> {
    let mut t = core::Tokenizer::from_prepared(&form?, config).ok()?;
    if let Some(ct) = chat_template {
        t.set_chat_template(ct.to_owned());
    }
    Some(t)
}

/// `fromURL`'s `options.fetch`: the caller's function, or the runtime's global `fetch`.
pub(super) fn fetch_option(v: JsValue) -> Result<Function, JsValue> {
    if v.is_undefined() {
        return Reflect::get(&js_sys::global(), &"fetch".into())?
            .dyn_into()
            .map_err(|_| type_err("fetch", "no global fetch in this runtime: pass one"));
    }
    v.clone()
        .dyn_into()
        .map_err(|_| type_err("fetch", format!("must be a function, got {}", show(&v))))
}

/// `fromURL`'s `options.cache`: none (absent, null or false), the runtime's Cache named
/// `tinker-wasm-tokenizers` (true), or the caller's Cache-like object.
pub(super) async fn cache_option(v: JsValue) -> Result<Option<JsValue>, JsValue> {
    if v.is_undefined() || v.is_null() || v.as_bool() == Some(false) {
        Ok(None)
    } else if v.as_bool() == Some(true) {
        let caches = Reflect::get(&js_sys::global(), &"caches".into())?;
        if caches.is_undefined() {
            return Err(type_err(
                "cache",
                "the Cache API is not available in this runtime",
            ));
        }
        let open: Function = Reflect::get(&caches, &"open".into())?.dyn_into()?;
        Ok(Some(
            await_promise(open.call1(&caches, &"tinker-wasm-tokenizers".into())?).await?,
        ))
    } else if v.is_object() && Reflect::get(&v, &"match".into())?.is_function() {
        Ok(Some(v))
    } else {
        Err(type_err(
            "cache",
            format!("must be a boolean or a Cache, got {}", show(&v)),
        ))
    }
}

/// The bytes a cache holds for `url`, if any.
pub(super) async fn cache_match(cache: &JsValue, url: &str) -> Result<Option<Vec<u8>>, JsValue> {
    let match_fn: Function = Reflect::get(cache, &"match".into())?.dyn_into()?;
    let hit = await_promise(match_fn.call1(cache, &url.into())?).await?;
    if hit.is_undefined() || hit.is_null() {
        return Ok(None);
    }
    let ab: Function = Reflect::get(&hit, &"arrayBuffer".into())?.dyn_into()?;
    let buf = await_promise(ab.call0(&hit)?).await?;
    Ok(Some(Uint8Array::new(&buf).to_vec()))
}

/// Stores `bytes` for `url` as a response caches keep: Workers' Cache API skips responses
/// without a freshness lifetime, so one is added (7 days) when the server sent none.
pub(super) async fn cache_put(
    cache: &JsValue,
    url: &str,
    bytes: &Uint8Array,
    content_type: &str,
    cache_control: Option<String>,
    tag: Option<&str>,
) -> Result<(), JsValue> {
    let headers = Object::new();
    set(&headers, "content-type", &content_type.into());
    if let Some(t) = tag {
        set(&headers, PREPARED_HEADER, &t.into());
    }
    let cache_control = cache_control.unwrap_or_else(|| "max-age=604800".into());
    set(&headers, "cache-control", &cache_control.into());
    let init = Object::new();
    set(&init, "headers", &headers.into());
    let ctor: Function = Reflect::get(&js_sys::global(), &"Response".into())?.dyn_into()?;
    let copy = Reflect::construct(&ctor, &Array::of2(bytes, &init))?;
    let put: Function = Reflect::get(cache, &"put".into())?.dyn_into()?;
    await_promise(put.call2(cache, &url.into(), &copy)?).await?;
    Ok(())
}
