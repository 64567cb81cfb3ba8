package main

import (
	"sort"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

// holdsSecretVar reports whether a function's environment (as synthesized)
// holds a value that must not be read by whoever may read its configuration.
func holdsSecretVar(vars map[string]any) bool {
	for _, name := range []string{"TICKET_SECRET", "PROXY_SECRET", "ORIGIN_SECRET", "ENTRY_TOKEN_KEYS"} {
		if vars[name] != nil {
			return true
		}
	}
	return false
}

// keyStatements are the key policy's statements, by Sid.
func keyStatements(t *testing.T, key map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, st := range asSlice(props(key)["KeyPolicy"].(map[string]any)["Statement"]) {
		sm := st.(map[string]any)
		out[sm["Sid"].(string)] = sm
	}
	return out
}

// actions of a statement, one or many.
func actions(st map[string]any) []string {
	if a, ok := st["Action"].(string); ok {
		return []string{a}
	}
	var out []string
	for _, a := range asSlice(st["Action"]) {
		out = append(out, a.(string))
	}
	return out
}

// A function whose environment holds a secret has it encrypted with the
// stack's own key, which only the roles of those functions may decrypt: the
// account may administer it (AWS requires someone can) and Lambda may
// encrypt with it for whoever deploys, but no one else decrypts, so
// lambda:GetFunctionConfiguration alone no longer shows a secret. A stack
// whose functions hold none has no key to pay for.
func TestSecretsAreEncryptedWithTheStacksKey(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	stacks["broker with a proxy"] = synthesize(t, func(p *WaitroomProps) {
		p.JwtIssuer, p.JwtAudience = "", nil
		p.TrustUserHeaderFromProxy, p.ProxySecretSSMParameter = true, "/waitroom/proxy-secret:1"
		p.Intake, p.TicketSecretSSMParameter = waitroom.IntakeBroker, testTicketParam
	})
	withKey := 0
	for name, s := range stacks {
		keys := s.resources("AWS::KMS::Key")
		var keyID string
		var readers []string
		for fn := range s.w.Functions {
			p := s.fnProps(t, fn)
			if !holdsSecretVar(s.env(t, fn)) {
				if p["KmsKeyArn"] != nil {
					t.Errorf("%s, %s: holds no secret, yet its environment takes the stack's key", name, fn)
				}
				if kms := roleKMSStatements(s, js(p["Role"])); len(kms) != 0 {
					t.Errorf("%s, %s: holds no secret, yet its role may use KMS: %s", name, fn, js(kms))
				}
				continue
			}
			if len(keys) != 1 {
				t.Fatalf("%s: %s holds a secret; %d KMS keys, want 1", name, fn, len(keys))
			}
			keyID = onlyKey(t, keys, "")
			if js(p["KmsKeyArn"]) != getAttArn(keyID) {
				t.Errorf("%s, %s: KmsKeyArn %s, want the stack's key %s", name, fn, js(p["KmsKeyArn"]), keyID)
			}
			readers = append(readers, js(p["Role"]))
			checkRoleDecrypts(t, name+", "+fn, s, js(p["Role"]), keyID)
		}
		if keyID == "" {
			if len(keys) != 0 {
				t.Errorf("%s: no function holds a secret, yet the stack has %d KMS keys", name, len(keys))
			}
			continue
		}
		withKey++
		checkKeyPolicy(t, name, s.resources("AWS::KMS::Key")[keyID], readers)
		if props(keys[keyID])["EnableKeyRotation"] != true {
			t.Errorf("%s: the key's material is never rotated", name)
		}
	}
	if withKey < 5 {
		t.Errorf("only %d stacks hold secrets", withKey)
	}
}

// checkKeyPolicy: the readers decrypt and nothing else; the account
// administers (never kms:*, never Decrypt) and encrypts or grants through
// Lambda only; the key goes with the stack (scheduled for deletion).
func checkKeyPolicy(t *testing.T, name string, key map[string]any, readers []string) {
	t.Helper()
	sts := keyStatements(t, key)
	sort.Strings(readers)
	var principals []string
	for _, p := range asSlice(sts["FunctionsReadTheirEnvironment"]["Principal"].(map[string]any)["AWS"]) {
		principals = append(principals, js(p))
	}
	if p, ok := sts["FunctionsReadTheirEnvironment"]["Principal"].(map[string]any)["AWS"].(map[string]any); ok {
		principals = []string{js(p)}
	}
	sort.Strings(principals)
	if js(principals) != js(readers) || js(actions(sts["FunctionsReadTheirEnvironment"])) != `["kms:Decrypt"]` {
		t.Errorf("%s: Decrypt for %v, want exactly the roles %v", name, principals, readers)
	}
	for sid, st := range sts {
		for _, a := range actions(st) {
			if sid != "FunctionsReadTheirEnvironment" && (a == "kms:*" || a == "kms:Decrypt" || strings.HasPrefix(a, "kms:ReEncrypt") ||
				strings.HasPrefix(a, "kms:GenerateDataKey")) {
				t.Errorf("%s: statement %s allows %s", name, sid, a)
			}
		}
		if st["Effect"] != "Allow" {
			t.Errorf("%s: statement %s: %v", name, sid, st["Effect"])
		}
	}
	if !strings.Contains(js(actions(sts["AccountAdministersTheKey"])), `"kms:PutKeyPolicy"`) {
		t.Errorf("%s: the account cannot administer the key: %s", name, js(sts["AccountAdministersTheKey"]))
	}
	for _, sid := range []string{"LambdaEncryptsForTheDeployer", "LambdaGrantsForTheDeployer"} {
		if !strings.Contains(js(sts[sid]["Condition"]), `"kms:ViaService"`) {
			t.Errorf("%s: %s is not limited to Lambda: %s", name, sid, js(sts[sid]))
		}
	}
	if !strings.Contains(js(sts["LambdaGrantsForTheDeployer"]["Condition"]), `"kms:GrantIsForAWSResource":"true"`) {
		t.Errorf("%s: grants not limited to AWS resources: %s", name, js(sts["LambdaGrantsForTheDeployer"]))
	}
	if key["DeletionPolicy"] != "Delete" || props(key)["PendingWindowInDays"] != float64(7) {
		t.Errorf("%s: the key outlives the stack: %v, %v days", name, key["DeletionPolicy"], props(key)["PendingWindowInDays"])
	}
}

// roleKMSStatements are the statements naming KMS in the role's (its
// Fn::GetAtt) policies beside its inline one.
func roleKMSStatements(s *synth, role string) []any {
	var kms []any
	for _, pol := range s.resources("AWS::IAM::Policy") {
		for _, r := range asSlice(props(pol)["Roles"]) {
			if getAttArn(r.(map[string]any)["Ref"].(string)) != role {
				continue
			}
			for _, st := range asSlice(props(pol)["PolicyDocument"].(map[string]any)["Statement"]) {
				if strings.Contains(js(st.(map[string]any)["Action"]), "kms:") {
					kms = append(kms, st)
				}
			}
		}
	}
	return kms
}

// checkRoleDecrypts: the role's one KMS statement is kms:Decrypt on the
// stack's key.
func checkRoleDecrypts(t *testing.T, name string, s *synth, role, keyID string) {
	t.Helper()
	kms := roleKMSStatements(s, role)
	want := js(map[string]any{"Action": "kms:Decrypt", "Effect": "Allow", "Resource": map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}, "Sid": DecryptOwnEnvironmentSid})
	if len(kms) != 1 || js(kms[0]) != want {
		t.Errorf("%s: the role's KMS statements %s, want only %s", name, js(kms), want)
	}
}
