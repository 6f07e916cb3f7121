//! `#[tool]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;
use syn::spanned::Spanned;

use crate::common::{self, Options, ParamKind};

pub(crate) fn expand(options: &Options, mut item: ItemFn) -> syn::Result<TokenStream> {
    options.check(
        &["name", "title", "description"],
        &["read_only", "destructive", "idempotent", "open_world"],
    )?;
    if let Some(literal) = &options.literal {
        return Err(syn::Error::new(
            literal.span(),
            "expected options (`name = \"…\"`), not a literal",
        ));
    }
    let params = common::params(&mut item, "#[tool]")?;
    let ret = common::return_type(&item);
    let uses_resolvers = params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Resolved(_)));
    let fn_name = item.sig.ident.to_string();
    if uses_resolvers && common::declares_input_required(&ret) {
        return Err(syn::Error::new(
            ret.span(),
            format!(
                "tool `{fn_name}` combines #[resolve] parameters with an InputRequiredResult \
                 return; a call has one input channel, so drive the multi-round flow either by \
                 resolvers or by the body, not both"
            ),
        ));
    }
    let struct_name = &item.sig.ident;
    let name = options
        .value("name")
        .map_or_else(|| fn_name.clone(), syn::LitStr::value);
    let description = common::option_string(
        options
            .value("description")
            .map(syn::LitStr::value)
            .or_else(|| common::docs(&item.attrs)),
    );
    let title = common::option_string(options.value("title").map(syn::LitStr::value));
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
    let args_struct = common::args_struct(&params, true);
    let bind = common::bind_args(&params, &quote!(__mcp_arguments));
    let resolution = quote!(__mcp_resolution);
    let resolve = common::resolve_params(
        &params,
        &resolution,
        &quote!(::mcp::__private::pending(&#resolution)),
    );
    let start_resolution = uses_resolvers.then(|| {
        quote! {
            let #resolution = ::mcp::__private::Resolution::new(
                ::core::clone::Clone::clone(&__mcp_ctx),
                __mcp_arguments,
            );
        }
    });
    let infos = common::resolver_infos(&params);
    let names = common::argument_names(&params);
    let call = common::call(&item, &params, &quote!(__mcp_ctx));
    let doc = format!(
        "Registers the [`{fn_name}()`] tool: `McpServer::builder(..).tool::<{fn_name}>()`."
    );
    let registration = common::registration_type(&item, &doc);
    Ok(quote! {
        #item
        #registration
        const _: () = {
            #args_struct

            impl ::mcp::__private::ToolDefinition for #struct_name {
                const RESOLVERS: &'static [&'static ::mcp::__private::ResolverInfo] = #infos;
                const ASKS: bool = <#ret as ::mcp::__private::IntoToolResult>::ASKS;

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

                fn call(
                    __mcp_ctx: ::mcp::__private::Context,
                    __mcp_arguments: ::mcp::__private::Extra,
                ) -> ::mcp::__private::HandlerFuture<::mcp::__private::CallToolResult> {
                    ::mcp::__private::boxed(async move {
                        #bind
                        #start_resolution
                        #resolve
                        let __mcp_output: #ret = #call;
                        ::mcp::__private::body_outcome(
                            "tool",
                            #name,
                            #uses_resolvers,
                            ::mcp::__private::IntoToolResult::into_tool_outcome(__mcp_output),
                        )
                    })
                }
            }

            const _: () = ::mcp::__private::check_resolvers(
                <#struct_name as ::mcp::__private::ToolDefinition>::RESOLVERS,
                &[#(#names),*],
            );
        };
    })
}
