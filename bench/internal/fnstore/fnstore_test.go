package fnstore

import (
	"testing"

	"github.com/waitroom/waitroom"
)

func TestConfigIsTheFunctionsWithTheLimiterOnAndNoInstantAdmission(t *testing.T) {
	cfg, err := Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.InstantAdmit || cfg.Trust.Limits.ClientRatePerSec != waitroom.DefaultClientRatePerSec || cfg.Trust.Limits.IPBurst != waitroom.DefaultIPBurst {
		t.Errorf("instant admission %v, limits %+v", cfg.InstantAdmit, cfg.Trust.Limits)
	}
	s := RoomSettings(cfg, 1000)
	if s.RatePerSec != 1000 || s.Capacity != 1_000_000_000 {
		t.Errorf("room settings: rate %g, capacity %d", s.RatePerSec, s.Capacity)
	}
	st := NewStores(nil, cfg)
	if st.On == st.Off || st.Of("on") != st.On || st.Of("off") != st.Off || st.Of("") != st.On {
		t.Error("Of picks the wrong store")
	}
	if AdmitPause(cfg) != cfg.AdmitInterval*6/5 {
		t.Errorf("pause %v", AdmitPause(cfg))
	}
}

func TestExpect(t *testing.T) {
	if Expect(waitroom.Standing{Status: waitroom.Ready}, nil, waitroom.Ready) != nil {
		t.Error("the wanted status refused")
	}
	if Expect(waitroom.Standing{Status: waitroom.Ready}, nil, waitroom.Waiting) == nil {
		t.Error("another status accepted")
	}
}
