package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// mixedText makes a deterministic multilingual text of about n bytes:
// English prose, code, CJK, Cyrillic, Arabic, Devanagari, emoji, numbers
// and white-space runs, with words drawn at random so that a word cache
// cannot make it artificially easy.
func mixedText(n int) string {
	r := rand.New(rand.NewPCG(42, 7))
	english := strings.Fields("the of and to in is that it was for on are with as his they be at one have this from or had by word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find any new work part take get place made live where after back little only round man year came show every good me give our under name very through just form sentence great think say help low line differ turn cause much mean before move right boy old too same tell does set three want air well also play small end put home read hand port large spell add even land here must big high such follow act why ask men change went light kind off need house picture try us again animal point mother world near build self earth father")
	pools := []struct {
		runes  []rune
		minLen int
		maxLen int
		sep    string
	}{
		{[]rune("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该"), 1, 3, ""},
		{[]rune("あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんアイウエオカキクケコサシスセソタチツテトナニヌネノ"), 2, 6, "、"},
		{[]rune("абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЖЗИКЛМНОПРСТУ"), 2, 10, " "},
		{[]rune("ابتثجحخدذرزسشصضطظعغفقكلمنهوي"), 2, 8, " "},
		{[]rune("कखगघचछजझटठडढणतथदधनपफबभमयरलवशसह"), 2, 6, " "},
		{[]rune("가나다라마바사아자차카타파하한국어를배우는것은재미있습니다"), 1, 4, " "},
		{[]rune("αβγδεζηθικλμνξοπρστυφχψω"), 3, 9, " "},
	}
	emoji := []string{"😀", "🙂", "🚀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "✨", "🤖"}
	code := []string{
		"func main() {\n\tfmt.Println(\"hello\")\n}\n",
		"for i in range(10):\n    print(i ** 2)  # squares\n",
		"if (x != nullptr && x->next) { return x->value; }\n",
		"SELECT id, name FROM users WHERE age >= 21 ORDER BY name;\n",
		"const re = /^[a-z0-9_]+$/i; // identifiers\n",
	}
	var b strings.Builder
	for b.Len() < n {
		switch k := r.IntN(12); {
		case k < 4: // English sentence
			words := 5 + r.IntN(15)
			for i := 0; i < words; i++ {
				w := english[r.IntN(len(english))]
				if i == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				} else {
					b.WriteByte(' ')
				}
				b.WriteString(w)
				if r.IntN(10) == 0 {
					b.WriteString([]string{",", ";", " -", "'s", "'ll"}[r.IntN(5)])
				}
			}
			b.WriteString([]string{". ", "? ", "! ", ".\n", ".\n\n"}[r.IntN(5)])
		case k < 5:
			b.WriteString(code[r.IntN(len(code))])
		case k < 6: // numbers
			fmt.Fprintf(&b, "%d.%02d, %d-%02d-%02d, %d ", r.IntN(100000), r.IntN(100), 1900+r.IntN(200), 1+r.IntN(12), 1+r.IntN(28), r.Int64())
		case k < 7:
			for i := r.IntN(3); i >= 0; i-- {
				b.WriteString(emoji[r.IntN(len(emoji))])
			}
			b.WriteString([]string{" ", "  ", "\t", "\n", "   \n"}[r.IntN(5)])
		default: // a sentence in another script
			p := pools[r.IntN(len(pools))]
			words := 3 + r.IntN(10)
			for i := 0; i < words; i++ {
				if i > 0 {
					b.WriteString(p.sep)
				}
				for l := p.minLen + r.IntN(p.maxLen-p.minLen+1); l > 0; l-- {
					b.WriteRune(p.runes[r.IntN(len(p.runes))])
				}
			}
			b.WriteString([]string{"。", ". ", "! ", "?\n", ".\n"}[r.IntN(5)])
		}
	}
	return b.String()
}
