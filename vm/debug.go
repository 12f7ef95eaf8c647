package vm

import (
	"fmt"

	"smith/isa"
)

// debugf queues a DEBUG event about block b (nil: the run) when
// --log-level debug is on. Its message is masked like every event's.
func (m *Machine) debugf(b *isa.Block, format string, args ...any) {
	if !m.cfg.Debug || m.st == nil {
		return
	}
	e := Event{Kind: EvDebug, Level: LevelDebug, Msg: fmt.Sprintf(format, args...)}
	if b != nil {
		e.Step = b.ID
	}
	m.emit(e)
}

// debugValue renders a substituted value for a DEBUG line, cut to 200
// bytes.
func debugValue(v any) string {
	s := fmt.Sprintf("%q", render(v))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// describe names the instruction at pc for a DEBUG line: its mnemonic and
// operands as the disassembler prints them, plus the block it starts.
func (m *Machine) describe(pc uint32) string {
	if int(pc) >= len(m.p.Code) {
		return fmt.Sprintf("pc %d", pc)
	}
	in := m.p.Code[pc]
	if in.Op == isa.OpJump {
		if e, ok := m.entryAt[in.A]; ok {
			return fmt.Sprintf("go to '%s'", m.p.Blocks[e.block].ID)
		}
	}
	if e, ok := m.entryAt[pc]; ok {
		return fmt.Sprintf("go to '%s'", m.p.Blocks[e.block].ID)
	}
	return fmt.Sprintf("%s at pc %d", in.Op, pc)
}
