package mdx

import ("testing";"fmt")

func TestTry(t *testing.T) {
	for _, c := range []struct{f, s string}{
		{"mdx", "import x from 'y'\n\n# Hi {user.name}\n\n<Foo onClick={x} {...p} a=\"javascript:1\">\n\n`{x}` and\n```js\n{y}\n```\n    {z}\n"},
		{"md", "<div onclick=\"x\">\n<script>x</script>\n</div>\n\nhi <img src=javascript:alert(1)> [a](java&#115;cript:x) <javascript:x> <a@b.c>\n\n    <script>\n"},
	} {
		f, err := Check([]byte(c.s), Options{Format: c.f})
		fmt.Println(err)
		for _, x := range f { fmt.Printf("%+v\n", x) }
		h, err := Render([]byte(c.s), RenderOptions{Format: c.f})
		fmt.Println(string(h), err)
		fmt.Printf("%q\n", PlainText([]byte(c.s)))
	}
}
