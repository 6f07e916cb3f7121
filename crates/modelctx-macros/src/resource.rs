//! `#[resource("uri")]` and `#[resource("scheme://{template}")]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;
use syn::spanned::Spanned;

use crate::common::{self, Options, ParamKind};
use crate::handler::{Handler, Kind};

/// The variable names of an RFC 6570 template: `{a}`, and lists `{a,b}` after any operator of
/// levels 1 to 3 (`+ # . / ; ? &`). `modelctx::uri_template` parses the template for real at
/// registration; this only pairs the handler's parameters with names.
fn template_variables(template: &str) -> Vec<String> {
    template
        .split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(expression, _)| expression))
        .flat_map(|expression| {
            expression
                .trim_start_matches(['+', '#', '.', '/', ';', '?', '&'])
                .split(',')
        })
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
    let handler = Handler::read(Kind::Resource, options, &mut item)?;
    let (params, ret, fn_name) = (&handler.params, &handler.ret, &handler.fn_name);
    let variables = template_variables(&uri.value());
    let is_template = uri.value().contains('{');
    if !is_template && (handler.uses_resolvers || common::declares_input_required(ret)) {
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
    handler.check_one_input_channel("resource template")?;
    for param in params {
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
    let mime_type = common::option_string(options.value("mime_type").map(syn::LitStr::value));
    let uri = uri.value();
    let method = handler.method(
        &item,
        &uri,
        &quote! {{
            let __mcp_mime: ::core::option::Option<::std::string::String> = #mime_type;
            ::modelctx::__private::IntoResourceResult::into_resource_outcome(
                __mcp_output,
                &__mcp_uri,
                __mcp_mime.as_deref(),
            )
        }},
    );
    let (name, title, description) = (&handler.name, &handler.title, &handler.description);
    let methods = quote! {
        fn describe() -> ::modelctx::__private::ResourceTemplate {
            let mut template = ::modelctx::__private::ResourceTemplate::default();
            template.uri_template = ::std::string::String::from(#uri);
            template.name = ::std::string::String::from(#name);
            template.title = #title;
            template.description = #description;
            template.mime_type = #mime_type;
            template
        }

        #method
    };
    Ok(handler.expand(&item, false, &variables, &methods))
}
