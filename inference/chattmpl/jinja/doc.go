// Package jinja is a small, sandboxed implementation of the Jinja2
// template language, covering what Hugging Face chat templates use and
// configured as transformers' apply_chat_template configures Jinja:
// trim_blocks and lstrip_blocks on, {% break %}/{% continue %}, the
// {% generation %} tag, raise_exception(), strftime_now(), and a tojson
// filter that is Python's json.dumps(ensure_ascii=False).
//
// Values follow Python's semantics (truthiness, None printing "None",
// int/float arithmetic, ordered dicts, undefined values that print as
// nothing but fail when used). Templates cannot reach files, the network
// or Go internals, and every rendering runs under a step, output and
// nesting budget (Limits), so a hostile template fails with an error
// wrapping ErrLimit instead of hanging or exhausting memory.
package jinja
