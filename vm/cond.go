package vm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"smith/isa"
	"smith/source"
)

// cond evaluates a condition in block b's scope. An error (an unresolved
// reference, a path outside the project, a bad pattern or number) fails
// the step.
func (m *Machine) cond(sc scope, c *isa.Cond) (bool, error) {
	switch c.Op {
	case isa.CondStepOK:
		r := m.st.Steps[c.Name]
		return r != nil && r.Status == StepCompleted, nil
	case isa.CondFileExists:
		return m.fileExists(sc, c)
	case isa.CondEquals:
		x, y, err := m.condXY(sc, c)
		return err == nil && x == y, err
	case isa.CondExitCode:
		r := m.st.Steps[c.Name]
		if r == nil || r.Status == StepSkipped || r.Status == StepRunning {
			return false, nil
		}
		return compare(float64(r.ExitCode), c.Cmp, c.Num)
	case isa.CondEnvSet:
		_, ok := m.env(c.Name)
		return ok, nil
	case isa.CondContains:
		return m.contains(sc, c)
	case isa.CondRegex:
		return m.regex(sc, c)
	case isa.CondNumber:
		return m.number(sc, c)
	case isa.CondAll:
		for i := range c.Sub {
			if ok, err := m.cond(sc, &c.Sub[i]); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case isa.CondAny:
		for i := range c.Sub {
			if ok, err := m.cond(sc, &c.Sub[i]); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case isa.CondNot:
		if len(c.Sub) != 1 {
			return false, fmt.Errorf("internal error: not has %d operands", len(c.Sub))
		}
		ok, err := m.cond(sc, &c.Sub[0])
		return !ok, err
	}
	return false, fmt.Errorf("internal error: condition op %d", c.Op)
}

// condXY substitutes both operands as strings.
func (m *Machine) condXY(sc scope, c *isa.Cond) (string, string, error) {
	x, err := m.substOpt(sc, c.X)
	if err != nil {
		return "", "", err
	}
	y, err := m.substOpt(sc, c.Y)
	return x, y, err
}

// fileExists checks X, a path relative to WORKSPACE, through the Host.
func (m *Machine) fileExists(sc scope, c *isa.Cond) (bool, error) {
	rel, err := m.substOpt(sc, c.X)
	if err != nil {
		return false, err
	}
	return m.cfg.Host.FileExists(m.cfg.Dirs, rel)
}

// contains tests whether the needle Y occurs in the haystack X: a
// substring of a string, or an element of a list.
func (m *Machine) contains(sc scope, c *isa.Cond) (bool, error) {
	var hay any = ""
	if c.X != nil {
		var err error
		if hay, err = m.typed(sc, *c.X); err != nil {
			return false, err
		}
	}
	needle, err := m.substOpt(sc, c.Y)
	if err != nil {
		return false, err
	}
	if l, ok := hay.([]any); ok {
		for _, e := range l {
			if render(e) == needle {
				return true, nil
			}
		}
		return false, nil
	}
	return strings.Contains(render(hay), needle), nil
}

// regex matches the pattern Y against X, with flags i, m, s.
func (m *Machine) regex(sc scope, c *isa.Cond) (bool, error) {
	text, pat, err := m.condXY(sc, c)
	if err != nil {
		return false, err
	}
	if c.Flags != "" {
		pat = "(?" + c.Flags + ")" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return false, &source.Error{Code: source.EStepFailed, Msg: fmt.Sprintf("regex: pattern '%s': %v", pat, err)}
	}
	return re.MatchString(text), nil
}

// number compares X and Y as numbers.
func (m *Machine) number(sc scope, c *isa.Cond) (bool, error) {
	xs, ys, err := m.condXY(sc, c)
	if err != nil {
		return false, err
	}
	x, err := parseNumber(xs)
	if err != nil {
		return false, err
	}
	y, err := parseNumber(ys)
	if err != nil {
		return false, err
	}
	return compare(x, c.Cmp, y)
}

// parseNumber reads s as a float64.
func parseNumber(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, &source.Error{Code: source.EStepFailed, Msg: fmt.Sprintf("number: '%s' is not a number", s)}
	}
	return f, nil
}

// compare applies op to x and y.
func compare(x float64, op string, y float64) (bool, error) {
	switch op {
	case "==", "eq":
		return x == y, nil
	case "!=", "ne":
		return x != y, nil
	case "<", "lt":
		return x < y, nil
	case "<=", "le":
		return x <= y, nil
	case ">", "gt":
		return x > y, nil
	case ">=", "ge":
		return x >= y, nil
	}
	return false, &source.Error{Code: source.EStepFailed, Msg: fmt.Sprintf("comparison '%s' is not one of ==, !=, <, <=, >, >=", op)}
}
