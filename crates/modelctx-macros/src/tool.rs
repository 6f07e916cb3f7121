//! `#[tool]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use crate::common::{self, Options};
use crate::handler::{Handler, Kind};

pub(crate) fn expand(options: &Options, mut item: ItemFn) -> syn::Result<TokenStream> {
    options.check(
        &["name", "title", "description"],
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
            tool
        }

        #method
    };
    let arguments = common::argument_names(&handler.params);
    Ok(handler.expand(&item, true, &arguments, &methods))
}
