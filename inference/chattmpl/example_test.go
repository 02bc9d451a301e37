package chattmpl_test

import (
	"fmt"

	"etchat/inference/chattmpl"
)

func ExampleBuiltin() {
	tmpl, _ := chattmpl.Builtin("gemma")
	prompt, _ := tmpl.Render([]chattmpl.Message{
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Hello!"},
		{Role: "user", Content: "Joke?"},
	}, chattmpl.RenderOptions{AddGenerationPrompt: true})
	fmt.Printf("%q\n%q\n", prompt, tmpl.TurnEnd())
	// Output:
	// "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn><start_of_turn>user\nJoke?<end_of_turn>\n<start_of_turn>model\n"
	// "<end_of_turn>"
}

func ExampleNewTemplate() {
	tmpl, _ := chattmpl.NewTemplate("demo",
		"{% for m in messages %}[{{ m.role }}] {{ m.content | trim }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}", nil)
	out, _ := tmpl.Render([]chattmpl.Message{{Role: "user", Content: "  hi  "}}, chattmpl.RenderOptions{AddGenerationPrompt: true})
	fmt.Print(out)
	// Output:
	// [user] hi
	// [assistant]
}
