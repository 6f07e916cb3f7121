//! `#[prompt]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use crate::common::{self, Options, ParamKind};
use crate::handler::{Handler, Kind};

pub(crate) fn expand(options: &Options, mut item: ItemFn) -> syn::Result<TokenStream> {
    options.check(&["name", "title", "description"], &[])?;
    options.reject_literal()?;
    let handler = Handler::read(Kind::Prompt, options, &mut item)?;
    handler.check_one_input_channel("prompt")?;
    let Handler {
        params,
        name,
        title,
        description,
        ..
    } = &handler;
    let arguments = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Argument))
        .map(|p| {
            let arg_name = p.ident.to_string().trim_start_matches("r#").to_owned();
            let required = !common::is_option(&p.ty);
            let arg_description = common::option_string(p.docs.clone());
            quote! {{
                let mut argument = ::modelctx::__private::PromptArgument::default();
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
    let method = handler.method(
        &item,
        name,
        &quote!(::modelctx::__private::IntoPromptResult::into_prompt_outcome(__mcp_output)),
    );
    let methods = quote! {
        fn prompt() -> ::modelctx::__private::Prompt {
            let mut prompt = ::modelctx::__private::Prompt::default();
            prompt.name = ::std::string::String::from(#name);
            prompt.description = #description;
            prompt.title = #title;
            prompt.arguments = #arguments;
            prompt
        }

        #method
    };
    let names = common::argument_names(params);
    Ok(handler.expand(&item, false, &names, &methods))
}
