//! `#[prompt]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;
use syn::spanned::Spanned;

use crate::common::{self, Options, ParamKind};

pub(crate) fn expand(options: &Options, mut item: ItemFn) -> syn::Result<TokenStream> {
    options.check(&["name", "title", "description"], &[])?;
    if let Some(literal) = &options.literal {
        return Err(syn::Error::new(
            literal.span(),
            "expected options (`name = \"…\"`), not a literal",
        ));
    }
    let params = common::params(&mut item, "#[prompt]")?;
    let ret = common::return_type(&item);
    let uses_resolvers = params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Resolved(_)));
    let fn_name = item.sig.ident.to_string();
    if uses_resolvers && common::declares_input_required(&ret) {
        return Err(syn::Error::new(
            ret.span(),
            format!(
                "prompt `{fn_name}` combines #[resolve] parameters with an InputRequiredResult \
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
    let arguments = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Argument))
        .map(|p| {
            let arg_name = p.ident.to_string().trim_start_matches("r#").to_owned();
            let required = !common::is_option(&p.ty);
            let arg_description = common::option_string(p.docs.clone());
            quote! {{
                let mut argument = ::mcp::__private::PromptArgument::default();
                argument.name = ::std::string::String::from(#arg_name);
                argument.description = #arg_description;
                argument.required = ::core::option::Option::Some(#required);
                argument
            }}
        })
        .collect::<Vec<_>>();
    let arguments = if arguments.is_empty() {
        quote!(::core::option::Option::None)
    } else {
        quote!(::core::option::Option::Some(::std::vec![#(#arguments),*]))
    };
    let args_struct = common::args_struct(&params, false);
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
        "Registers the [`{fn_name}()`] prompt: `McpServer::builder(..).prompt::<{fn_name}>()`."
    );
    let registration = common::registration_type(&item, &doc);
    Ok(quote! {
        #item
        #registration
        const _: () = {
            #args_struct

            impl ::mcp::__private::PromptDefinition for #struct_name {
                const RESOLVERS: &'static [&'static ::mcp::__private::ResolverInfo] = #infos;
                const ASKS: bool = <#ret as ::mcp::__private::IntoPromptResult>::ASKS;

                fn prompt() -> ::mcp::__private::Prompt {
                    let mut prompt = ::mcp::__private::Prompt::default();
                    prompt.name = ::std::string::String::from(#name);
                    prompt.description = #description;
                    prompt.title = #title;
                    prompt.arguments = #arguments;
                    prompt
                }

                fn get(
                    __mcp_ctx: ::mcp::__private::Context,
                    __mcp_arguments: ::mcp::__private::Extra,
                ) -> ::mcp::__private::HandlerFuture<::mcp::__private::GetPromptResult> {
                    ::mcp::__private::boxed(async move {
                        #bind
                        #start_resolution
                        #resolve
                        let __mcp_output: #ret = #call;
                        ::mcp::__private::body_outcome(
                            "prompt",
                            #name,
                            #uses_resolvers,
                            ::mcp::__private::IntoPromptResult::into_prompt_outcome(__mcp_output),
                        )
                    })
                }
            }

            const _: () = ::mcp::__private::check_resolvers(
                <#struct_name as ::mcp::__private::PromptDefinition>::RESOLVERS,
                &[#(#names),*],
            );
        };
    })
}
