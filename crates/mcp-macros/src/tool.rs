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
            let mut annotations = ::mcp::__private::ToolAnnotations::default();
            #(#sets)*
            tool.annotations = ::core::option::Option::Some(annotations);
        }
    } else {
        TokenStream::new()
    };
    let method = handler.method(
        &item,
        name,
        &quote!(::mcp::__private::IntoToolResult::into_tool_outcome(
            __mcp_output
        )),
    );
    let methods = quote! {
        fn tool() -> ::mcp::__private::Tool {
            let mut tool = ::mcp::__private::Tool::new(
                #name,
                ::mcp::__private::input_schema::<__McpArgs>(),
            );
            tool.description = #description;
            tool.title = #title;
            tool.output_schema = <#ret as ::mcp::__private::IntoToolResult>::output_schema();
            #annotations
            tool
        }

        #method
    };
    let arguments = common::argument_names(&handler.params);
    Ok(handler.expand(&item, true, &arguments, &methods))
}
