package mdx

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Two block constructs where MDX reads differently from CommonMark, for
// mdxParser. Both matter to the gate because they decide what is code.
//
// Fences: MDX turns indented code off, and with it the four-space limit on
// the indentation of other blocks, so a fence opens and closes at any
// indentation. goldmark's own parser closes a fence only on a line indented
// less than four spaces: a fence closed by "    ```" in MDX would run on in
// goldmark and the text after it, which MDX evaluates, would pass for code.
//
// JSX and expression flow: a line that holds only JSX tags and {…}
// expressions (a tag may run over several lines) is a block of its own in
// MDX, so the next line starts a new block — a list item ("5. Step"), a fence
// inside it — where CommonMark would continue the paragraph above it.

// mdxFenceParser parses fenced code as MDX does (see above).
type mdxFenceParser struct{}

// mdxFence is what an open fence needs to find its closing line.
type mdxFence struct {
	char   byte // '`' or '~'
	length int  // the opening run's length
	indent int  // the opening line's indentation, stripped from content lines
}

var mdxFenceKey = parser.NewContextKey()

// Trigger implements parser.BlockParser.
func (mdxFenceParser) Trigger() []byte { return []byte{'`', '~'} }

// Open implements parser.BlockParser: three or more backticks or tildes, an
// optional info string (no backtick in it after backticks).
func (mdxFenceParser) Open(_ ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	line, seg := reader.PeekLine()
	pos := pc.BlockOffset()
	if pos < 0 || (line[pos] != '`' && line[pos] != '~') {
		return nil, parser.NoChildren
	}
	char := line[pos]
	end := pos
	for end < len(line) && line[end] == char {
		end++
	}
	if end-pos < 3 {
		return nil, parser.NoChildren
	}
	var info *ast.Text
	rest := line[end:]
	from, to := util.TrimLeftSpaceLength(rest), len(rest)-util.TrimRightSpaceLength(rest)
	if from < to {
		if char == '`' && containsByte(rest[from:to], '`') {
			return nil, parser.NoChildren
		}
		// line[k] is source[seg.Start-seg.Padding+k] (padding comes first).
		base := seg.Start - seg.Padding + end
		info = ast.NewTextSegment(text.NewSegment(base+from, base+to))
	}
	indent, _ := util.IndentWidth(line, reader.LineOffset())
	pc.Set(mdxFenceKey, &mdxFence{char: char, length: end - pos, indent: indent})
	return ast.NewFencedCodeBlock(info), parser.NoChildren
}

// Continue implements parser.BlockParser: a line of the fence's character,
// at least as long as the opening run and at any indentation, closes it;
// any other line is code, less the opening line's indentation.
func (mdxFenceParser) Continue(node ast.Node, reader text.Reader, pc parser.Context) parser.State {
	line, seg := reader.PeekLine()
	f, _ := pc.Get(mdxFenceKey).(*mdxFence)
	if f == nil {
		return parser.Close
	}
	_, pos := util.IndentWidth(line, reader.LineOffset())
	end := pos
	for end < len(line) && line[end] == f.char {
		end++
	}
	if end-pos >= f.length && util.IsBlank(line[end:]) {
		reader.AdvanceToEOL()
		return parser.Close
	}
	start, padding := util.IndentPositionPadding(line, reader.LineOffset(), seg.Padding, f.indent)
	if start < 0 { // indented less than the fence: strip what there is
		start, padding = max(0, util.FirstNonSpacePosition(line)-seg.Padding), 0
	}
	code := text.NewSegmentPadding(seg.Start+start, seg.Stop, padding)
	code.ForceNewline = true
	node.Lines().Append(code)
	reader.AdvanceToEOL()
	return parser.Continue | parser.NoChildren
}

// Close implements parser.BlockParser.
func (mdxFenceParser) Close(ast.Node, text.Reader, parser.Context) {}

// CanInterruptParagraph implements parser.BlockParser.
func (mdxFenceParser) CanInterruptParagraph() bool { return true }

// CanAcceptIndentedLine implements parser.BlockParser: any indentation.
func (mdxFenceParser) CanAcceptIndentedLine() bool { return true }

// containsByte reports whether b holds c.
func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// kindMDXFlow is the node kind of a JSX or expression flow line.
var kindMDXFlow = ast.NewNodeKind("MDXFlow")

// mdxFlow is a block of JSX tags and expressions on lines of their own. It
// renders nothing (Render blanks every tag and expression before goldmark
// sees the body) and its text is read by the lexer like any other text.
type mdxFlow struct {
	ast.BaseBlock
	end int // source offset where the block's last tag or expression ends
}

// Kind implements ast.Node.
func (*mdxFlow) Kind() ast.NodeKind { return kindMDXFlow }

// Dump implements ast.Node.
func (n *mdxFlow) Dump(source []byte, level int) { ast.DumpHelper(n, source, level, nil, nil) }

// IsRaw implements ast.Node: goldmark parses no inline markup in it.
func (*mdxFlow) IsRaw() bool { return true }

// mdxFlowParser parses JSX and expression flow (see above). It does not
// interrupt a paragraph: a tag line right under paragraph text stays in
// the paragraph, where nothing after it can pass for code.
type mdxFlowParser struct{}

// Trigger implements parser.BlockParser.
func (mdxFlowParser) Trigger() []byte { return []byte{'<', '{'} }

// Open implements parser.BlockParser.
func (mdxFlowParser) Open(_ ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	line, seg := reader.PeekLine()
	pos := pc.BlockOffset()
	if pos < 0 || (line[pos] != '<' && line[pos] != '{') {
		return nil, parser.NoChildren
	}
	end, ok := flowEnd(reader.Source(), seg.Start-seg.Padding+pos)
	if !ok {
		return nil, parser.NoChildren
	}
	reader.AdvanceToEOL()
	return &mdxFlow{end: end}, parser.NoChildren
}

// Continue implements parser.BlockParser: the lines a multi-line tag or
// expression runs over belong to the block.
func (mdxFlowParser) Continue(node ast.Node, reader text.Reader, _ parser.Context) parser.State {
	_, seg := reader.PeekLine()
	if n, ok := node.(*mdxFlow); ok && seg.Start < n.end {
		reader.AdvanceToEOL()
		return parser.Continue | parser.NoChildren
	}
	return parser.Close
}

// Close implements parser.BlockParser.
func (mdxFlowParser) Close(ast.Node, text.Reader, parser.Context) {}

// CanInterruptParagraph implements parser.BlockParser.
func (mdxFlowParser) CanInterruptParagraph() bool { return false }

// CanAcceptIndentedLine implements parser.BlockParser: any indentation.
func (mdxFlowParser) CanAcceptIndentedLine() bool { return true }

// flowEnd reports whether src holds, from i, only JSX tags and {…}
// expressions up to the end of a line (spaces and tabs between them), and
// returns where the last of them ends. Tags are read by the lexer's own tag
// reader; one that does not lex makes no flow.
func flowEnd(src []byte, i int) (int, bool) {
	end := i
	for {
		switch {
		case i < len(src) && src[i] == '<':
			lx := &lexer{src: src}
			e, ok := lx.tag(i)
			if !ok || lx.has(KindUnparseable) {
				return 0, false
			}
			i = e
		case i < len(src) && src[i] == '{':
			i = (&lexer{src: src}).braces(i)
		default:
			return 0, false
		}
		end = i
		for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
		if i == len(src) || src[i] == '\n' || src[i] == '\r' {
			return end, true
		}
	}
}

// has reports whether the lexer found a construct of kind.
func (lx *lexer) has(kind string) bool {
	for _, f := range lx.findings {
		if f.kind == kind {
			return true
		}
	}
	return false
}
