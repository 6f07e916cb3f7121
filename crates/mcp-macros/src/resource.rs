//! `#[resource("uri")]` and `#[resource("scheme://{template}")]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;
use syn::spanned::Spanned;

use crate::common::{self, Options, ParamKind};

/// The variable names of an RFC 6570 template (`{a}`, `{+a}`, `{#a}`, `{?a,b}`).
fn template_variables(template: &str) -> Vec<String> {
    template
        .split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(expression, _)| expression))
        .flat_map(|expression| expression.trim_start_matches(['+', '#', '?']).split(','))
        .map(str::to_owned)
        .collect()
}

pub(crate) fn expand(options: &Options, mut item: ItemFn) -> syn::Result<TokenStream> {
    options.check(&["name", "title", "description", "mime_type"], &[])?;
    let Some(uri) = options.literal.clone() else {
        return Err(syn::Error::new(
            item.sig.ident.span(),
            "expected the resource URI or URI template: `#[resource(\"scheme://path/{var}\")]`",
        ));
    };
    let params = common::params(&mut item, "#[resource]")?;
    let ret = common::return_type(&item);
    let fn_name = item.sig.ident.to_string();
    let variables = template_variables(&uri.value());
    let is_template = uri.value().contains('{');
    let uses_resolvers = params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Resolved(_)));
    let asks = common::declares_input_required(&ret);
    if !is_template && (uses_resolvers || asks) {
        let span = params
            .iter()
            .find(|p| matches!(p.kind, ParamKind::Resolved(_)))
            .map_or_else(|| ret.span(), |p| p.ident.span());
        return Err(syn::Error::new(
            span,
            format!(
                "static resource `{fn_name}` cannot ask for input: only resource templates may \
                 return an InputRequiredResult or use #[resolve] parameters"
            ),
        ));
    }
    if uses_resolvers && asks {
        return Err(syn::Error::new(
            ret.span(),
            format!(
                "resource template `{fn_name}` combines #[resolve] parameters with an \
                 InputRequiredResult return; a call has one input channel, so drive the \
                 multi-round flow either by resolvers or by the body, not both"
            ),
        ));
    }
    for param in &params {
        let name = param.ident.to_string();
        if matches!(param.kind, ParamKind::Argument) && !variables.contains(&name) {
            let message = if is_template {
                format!(
                    "parameter `{name}` is not a variable of the template {:?}; parameters are \
                     template variables, the Context, or #[resolve] parameters",
                    uri.value()
                )
            } else {
                format!(
                    "a static resource takes no arguments (only the Context); use a template \
                     such as \"scheme://{{{name}}}\" for `{name}`"
                )
            };
            return Err(syn::Error::new(param.ident.span(), message));
        }
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
    let mime_type = common::option_string(options.value("mime_type").map(syn::LitStr::value));
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
    let call = common::call(&item, &params, &quote!(__mcp_ctx));
    let doc = format!(
        "Registers the [`{fn_name}()`] resource: `McpServer::builder(..).resource::<{fn_name}>()`."
    );
    let registration = common::registration_type(&item, &doc);
    let uri = uri.value();
    Ok(quote! {
        #item
        #registration
        const _: () = {
            #args_struct

            impl ::mcp::__private::ResourceDefinition for #struct_name {
                const RESOLVERS: &'static [&'static ::mcp::__private::ResolverInfo] = #infos;
                const ASKS: bool = <#ret as ::mcp::__private::IntoResourceResult>::ASKS;

                fn describe() -> ::mcp::__private::ResourceTemplate {
                    let mut template = ::mcp::__private::ResourceTemplate::default();
                    template.uri_template = ::std::string::String::from(#uri);
                    template.name = ::std::string::String::from(#name);
                    template.title = #title;
                    template.description = #description;
                    template.mime_type = #mime_type;
                    template
                }

                fn read(
                    __mcp_ctx: ::mcp::__private::Context,
                    __mcp_uri: ::std::string::String,
                    __mcp_arguments: ::mcp::__private::Extra,
                ) -> ::mcp::__private::HandlerFuture<::mcp::__private::ReadResourceResult> {
                    ::mcp::__private::boxed(async move {
                        #bind
                        #start_resolution
                        #resolve
                        let __mcp_output: #ret = #call;
                        let __mcp_mime: ::core::option::Option<::std::string::String> = #mime_type;
                        ::mcp::__private::body_outcome(
                            "resource",
                            #uri,
                            #uses_resolvers,
                            ::mcp::__private::IntoResourceResult::into_resource_outcome(
                                __mcp_output,
                                &__mcp_uri,
                                __mcp_mime.as_deref(),
                            ),
                        )
                    })
                }
            }

            const _: () = ::mcp::__private::check_resolvers(
                <#struct_name as ::mcp::__private::ResourceDefinition>::RESOLVERS,
                &[#(#variables),*],
            );
        };
    })
}
