//! `#[tool]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use crate::common::{self, Options};
use crate::handler::{Handler, Kind};

pub(crate) fn expand(options: &Options, mut item: ItemFn) -> syn::Result<TokenStream> {
    options.check(
        &[
            "name",
            "title",
            "description",
            "ui",
            "visibility",
            "meta",
            "icons",
        ],
        &["read_only", "destructive", "idempotent", "open_world"],
    )?;
    options.reject_literal()?;
    let handler = Handler::read(Kind::Tool, options, &mut item)?;
    handler.check_one_input_channel("tool")?;
    let Handler {
        ret,
        name,
        title,
        description,
        ..
    } = &handler;
    let hints = [
        ("read_only", quote!(read_only_hint)),
        ("destructive", quote!(destructive_hint)),
        ("idempotent", quote!(idempotent_hint)),
        ("open_world", quote!(open_world_hint)),
    ];
    let annotations = if hints.iter().any(|(flag, _)| options.flag(flag)) {
        let sets = hints
            .iter()
            .filter(|(flag, _)| options.flag(flag))
            .map(|(_, field)| quote!(annotations.#field = ::core::option::Option::Some(true);));
        quote! {
            let mut annotations = ::modelctx::__private::ToolAnnotations::default();
            #(#sets)*
            tool.annotations = ::core::option::Option::Some(annotations);
        }
    } else {
        TokenStream::new()
    };
    let meta = hand_meta(options)?;
    let icons = icons(options)?;
    let ui = ui_meta(options)?;
    let method = handler.method(
        &item,
        name,
        &quote!(::modelctx::__private::IntoToolResult::into_tool_outcome(
            __mcp_output
        )),
    );
    let methods = quote! {
        fn tool() -> ::modelctx::__private::Tool {
            let mut tool = ::modelctx::__private::Tool::new(
                #name,
                ::modelctx::__private::input_schema::<__McpArgs>(),
            );
            tool.description = #description;
            tool.title = #title;
            tool.output_schema = <#ret as ::modelctx::__private::IntoToolResult>::output_schema();
            #annotations
            #meta
            #icons
            #ui
            tool
        }

        #method
    };
    let arguments = common::argument_names(&handler.params);
    Ok(handler.expand(&item, true, &arguments, &methods))
}

/// `ui = "ui://…"` and `visibility = "model, app"`: the tool's `_meta.ui` (MCP Apps), checked
/// here for what a literal can show (the scheme, the visibility words); the server checks the
/// rest when it is built (a registered resource, the MIME type).
fn ui_meta(options: &Options) -> syn::Result<TokenStream> {
    let uri = options.value("ui");
    let visibility = options.value("visibility");
    if uri.is_none() && visibility.is_none() {
        return Ok(TokenStream::new());
    }
    if let Some(uri) = uri
        && !uri.value().starts_with("ui://")
    {
        return Err(syn::Error::new(
            uri.span(),
            format!("`ui` must be a ui:// URI (MCP Apps), not {:?}", uri.value()),
        ));
    }
    let mut words = Vec::new();
    if let Some(visibility) = visibility {
        for word in visibility.value().split(',').map(str::trim) {
            if !matches!(word, "model" | "app") {
                return Err(syn::Error::new(
                    visibility.span(),
                    format!(
                        "`visibility` lists \"model\" and/or \"app\" (comma-separated), not {word:?}"
                    ),
                ));
            }
            if words.contains(&word.to_owned()) {
                return Err(syn::Error::new(
                    visibility.span(),
                    format!("`visibility` lists {word:?} twice"),
                ));
            }
            words.push(word.to_owned());
        }
    }
    let uri = match uri {
        Some(uri) => quote!(::core::option::Option::Some(#uri)),
        None => quote!(::core::option::Option::None),
    };
    Ok(quote! {
        ::modelctx::__private::set_tool_ui(&mut tool, #uri, &[#(#words),*]);
    })
}

/// `meta = "{…}"`: entries of the tool's `_meta`, a JSON object checked here. The MCP Apps keys
/// are refused: `ui = …` writes them, and the server checks them together.
fn hand_meta(options: &Options) -> syn::Result<TokenStream> {
    let Some(meta) = options.value("meta") else {
        return Ok(TokenStream::new());
    };
    let parsed: serde_json::Value = serde_json::from_str(&meta.value())
        .map_err(|error| syn::Error::new(meta.span(), format!("`meta` is not JSON: {error}")))?;
    let Some(object) = parsed.as_object() else {
        return Err(syn::Error::new(
            meta.span(),
            "`meta` must be a JSON object of `_meta` entries",
        ));
    };
    if let Some(key) = object
        .keys()
        .find(|key| matches!(key.as_str(), "ui" | "ui/resourceUri"))
    {
        return Err(syn::Error::new(
            meta.span(),
            format!("`meta` sets {key:?}, which `ui = \"ui://…\"` (and `visibility`) write"),
        ));
    }
    Ok(quote! {
        ::modelctx::__private::set_tool_meta(&mut tool, #meta);
    })
}

/// `icons = "https://… data:…"`: the tool's icons, each an `https:` or `data:` URL (a client
/// fetches them), separated by spaces (a `data:` URL has commas, no URL has a space).
fn icons(options: &Options) -> syn::Result<TokenStream> {
    let Some(icons) = options.value("icons") else {
        return Ok(TokenStream::new());
    };
    let value = icons.value();
    let sources: Vec<&str> = value.split_whitespace().collect();
    if sources.is_empty() {
        return Err(syn::Error::new(icons.span(), "`icons` lists no URL"));
    }
    for source in &sources {
        let lower = source.to_ascii_lowercase();
        if !(lower.starts_with("https://") || lower.starts_with("data:")) {
            return Err(syn::Error::new(
                icons.span(),
                format!("`icons` lists https: or data: URLs (space-separated), not {source:?}"),
            ));
        }
    }
    Ok(quote! {
        ::modelctx::__private::set_tool_icons(&mut tool, &[#(#sources),*]);
    })
}
