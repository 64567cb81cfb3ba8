package web

// Language is the language Asked picks (English when none is asked for).
func Language(query, acceptLanguage string) string {
	lang, _ := Asked(query, acceptLanguage)
	return lang
}
