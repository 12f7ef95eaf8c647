package source

import (
	"slices"
	"strings"
)

// Suggest returns the candidate nearest to name by edit distance, or "" when
// none is close enough to be a likely typo (distance at most a third of the
// longer name's length, and at least 1 for short names). A plural written for
// a singular name, or the other way round (retries for retry), and a name
// with or without a seconds suffix (timeout_sec for timeout, backoff for
// backoff_sec) count as one edit.
func Suggest(name string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := editDistance(name, c)
		if strings.EqualFold(name, c) {
			d = 0 // a difference of case alone is the nearest of all
		} else if d > 1 && (singular(name) == c || singular(c) == name || seconds(name) == c || seconds(c) == name) {
			d = 1
		}
		max := len([]rune(name))
		if n := len([]rune(c)); n > max {
			max = n
		}
		limit := max / 3
		if limit < 1 {
			limit = 1
		}
		if d > limit {
			continue
		}
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

// seconds is name without a suffix naming seconds (timeout_sec: timeout,
// backoff_sec: backoff), or name when it has none: a key written with the
// unit that another key of the same meaning leaves out, or without the
// unit another one spells.
func seconds(name string) string {
	for _, suf := range []string{"_seconds", "_secs", "_sec", "_s"} {
		if b, ok := strings.CutSuffix(name, suf); ok && b != "" {
			return b
		}
	}
	return name
}

// singular is an English plural's singular (retries: retry, branches:
// branch, secrets: secret), or name when it does not look plural.
func singular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies"):
		return strings.TrimSuffix(name, "ies") + "y"
	case strings.HasSuffix(name, "ches"), strings.HasSuffix(name, "shes"), strings.HasSuffix(name, "sses"), strings.HasSuffix(name, "xes"):
		return strings.TrimSuffix(name, "es")
	case strings.HasSuffix(name, "s") && !strings.HasSuffix(name, "ss"):
		return strings.TrimSuffix(name, "s")
	}
	return name
}

// DidYouMean returns " (did you mean 'X'?)" for the nearest candidate, or "".
func DidYouMean(name string, candidates []string) string {
	if s := Suggest(name, candidates); s != "" {
		return " (did you mean '" + s + "'?)"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in runes, with
// a transposition of two neighbours counting as one edit.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}

// DidYouMeanOrList is DidYouMean, or, when no candidate is near name, the
// candidates themselves: " (LABEL: 'a', 'b', 'c')", sorted.
func DidYouMeanOrList(name string, candidates []string, label string) string {
	if s := DidYouMean(name, candidates); s != "" || len(candidates) == 0 {
		return s
	}
	sorted := slices.Sorted(slices.Values(candidates))
	return " (" + label + ": '" + strings.Join(slices.Compact(sorted), "', '") + "')"
}
