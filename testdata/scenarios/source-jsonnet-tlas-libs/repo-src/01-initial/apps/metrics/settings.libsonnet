{ retention: '15d', scrapeInterval: '30s' }
